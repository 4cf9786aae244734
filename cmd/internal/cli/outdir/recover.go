package outdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// The directories Replace prepares in are named after the process that made them, so that
// a later Replace can tell those of a run that was killed (its process gone) from those of
// one still running: `.DIR.new-PID-*` beside DIR, `.concourse-tekton-PID-*` inside it.

// siblingStage is the pattern of a directory prepared beside dir (os.MkdirTemp's).
func siblingStage(dir string) string {
	return "." + filepath.Base(dir) + ".new-" + strconv.Itoa(os.Getpid()) + "-"
}

// journalName is the file in an in-place staging directory that commits its renames.
const journalName = "journal"

// journal is what an in-place Replace renames into dir (from the staging directory's
// new/) and moves aside (into its old/).
type journal struct {
	Files  []string `json:"files"`
	Remove []string `json:"remove,omitempty"`
}

// writeJournal writes the journal of the staging directory work and syncs it and work.
func writeJournal(fsys fileSystem, work string, j journal) error {
	data, err := json.Marshal(j)
	if err != nil {
		return err
	}
	if err := fsys.WriteFile(filepath.Join(work, journalName), data, 0o600); err != nil {
		return err
	}
	return syncAll(work, []string{journalName})
}

// recoverLeftovers finishes or undoes what a Replace of dir that was killed left: a
// staging directory inside dir whose journal was written has its renames made (those not
// made yet), then goes; one without, and one prepared beside dir, go (the files in dir
// were not touched). Those of a process still running are left alone. exists says dir is
// a directory (else only what is beside it is looked at).
func recoverLeftovers(fsys fileSystem, dir string, exists bool) error {
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if entries, err := os.ReadDir(parent); err == nil {
		for _, e := range entries {
			if rest, ok := strings.CutPrefix(e.Name(), "."+base+".new-"); ok && e.IsDir() && !running(rest) {
				if err := os.RemoveAll(filepath.Join(parent, e.Name())); err != nil {
					return fmt.Errorf("removing what a killed conversion left: %w", err)
				}
			}
		}
	}
	if !exists {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), stagingPrefix)
		if !ok || !e.IsDir() || running(rest) {
			continue
		}
		work := filepath.Join(dir, e.Name())
		if err := rollForward(fsys, dir, work); err != nil {
			return fmt.Errorf("finishing what a killed conversion committed in %s: %w", work, err)
		}
		if err := os.RemoveAll(work); err != nil {
			return fmt.Errorf("removing what a killed conversion left: %w", err)
		}
	}
	return nil
}

// rollForward makes the renames the journal of work commits that were not made: each
// file still in new/ goes into dir (what it replaces first moved into old/, unless that
// was done), each file to remove still in dir moves into old/. Without a journal there is
// nothing to do.
func rollForward(fsys fileSystem, dir, work string) error {
	data, err := os.ReadFile(filepath.Join(work, journalName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var j journal
	if err := json.Unmarshal(data, &j); err != nil {
		// A journal is synced before any rename: one that cannot be read was never
		// complete, and nothing was renamed.
		return nil
	}
	newDir, oldDir := filepath.Join(work, "new"), filepath.Join(work, "old")
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	for _, name := range j.Files {
		if checkName(name) != nil || !exists(filepath.Join(newDir, name)) {
			continue
		}
		target := filepath.Join(dir, name)
		if exists(target) && !exists(filepath.Join(oldDir, name)) {
			if err := fsys.Rename(target, filepath.Join(oldDir, name)); err != nil {
				return err
			}
		}
		if err := fsys.Rename(filepath.Join(newDir, name), target); err != nil {
			return err
		}
	}
	for _, name := range j.Remove {
		target := filepath.Join(dir, name)
		if checkName(name) != nil || !exists(target) || exists(filepath.Join(oldDir, name)) {
			continue
		}
		if err := fsys.Rename(target, filepath.Join(oldDir, name)); err != nil {
			return err
		}
	}
	return nil
}

// running says whether the process named at the start of a staging directory's name's
// rest (PID-...) runs. One that names none (left by an earlier version) is not.
func running(rest string) bool {
	pidText, _, ok := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

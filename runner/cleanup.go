package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// notCleaned is the verdict's error result while it cleans the build volume: if the
// runner dies before it is done, the result stays, and the volume is never cloned.
const notCleaned = "the build volume was not cleaned: the job's next build does not start from its caches"

// leaveCaches readies the volume of a finished job build to be cloned by the job's next
// build (package pvc): everything but caches/ goes, since plan IDs repeat across builds
// and a stale outcome, deadline, abort marker or artifact must never reach a clone.
//
// The verdict calls it once its outcome is recorded. A volume that could not be cleaned
// keeps an error result on the verdict, which tells pvc.CacheSource not to clone it; the
// build's outcome stays as it is. One-off builds keep their volume whole: they have no
// caches, and their outputs may still be read. A build that did not succeed keeps what
// goes under runspec.PreservedDir instead (preserveVolume), for its steps to be
// intercepted as they ended, as Concourse keeps a failed build's containers.
func (s *step) leaveCaches(outcome runspec.Outcome) {
	if s.spec.Build.JobName == "" || s.failure != "" {
		return
	}
	clean := cleanVolume
	if outcome != runspec.Succeeded && s.spec.Build.Name != "" {
		clean = func(root string) error { return preserveVolume(root, s.spec.Build.Name) }
	}
	if err := s.writeResult(runspec.ResultError, []byte(notCleaned)); err != nil {
		s.logf("%v", err)
		s.fail(errors.New(notCleaned))
		return
	}
	err := errors.Join(pruneResourceCaches(s.paths.Volume, s.spec.Build.Name), clean(s.paths.Volume))
	if err != nil {
		s.logf("%s: %v", notCleaned, err)
		s.fail(fmt.Errorf("%s: %w", notCleaned, err))
		return
	}
	if err := os.Remove(s.resultPath(runspec.ResultError)); err != nil {
		s.logf("%v", err)
		s.fail(errors.New(notCleaned))
	}
}

// cleanVolume deletes everything at the root of a build volume but the task caches (and
// the file system's lost+found), and the leftovers of interrupted cache saves.
func cleanVolume(root string) error {
	return tidyVolume(root, func(name string) error { return os.RemoveAll(filepath.Join(root, name)) })
}

// preserveVolume is cleanVolume for a build that did not succeed: what it would delete
// goes under runspec.PreservedDir instead (whose runspec.PreservedBuild file names the
// build), in place of what an earlier failed build kept there, which goes; caches/ stays
// where it is, for the next build, and preserved/caches links to it. An intercept
// session in an ended step of the build finds the volume there (preservedRoot).
func preserveVolume(root, build string) error {
	dir := filepath.Join(root, runspec.PreservedDir)
	next := dir + ".next"
	for _, d := range []string{next, dir} {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("preserving the build volume: %w", err)
		}
	}
	if err := os.Mkdir(next, 0o755); err != nil {
		return fmt.Errorf("preserving the build volume: %w", err)
	}
	err := tidyVolume(root, func(name string) error {
		if name == filepath.Base(next) {
			return nil
		}
		return os.Rename(filepath.Join(root, name), filepath.Join(next, name))
	})
	if err != nil {
		return err
	}
	errs := []error{
		os.Symlink(filepath.Join("..", runspec.CachesDir), filepath.Join(next, runspec.CachesDir)),
		os.WriteFile(filepath.Join(next, runspec.PreservedBuild), []byte(build), 0o644),
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("preserving the build volume: %w", err)
	}
	if err := os.Rename(next, dir); err != nil {
		return fmt.Errorf("preserving the build volume: %w", err)
	}
	return nil
}

// preservedRoot is where an intercept session in an ended step of build finds the
// build volume mounted at root: under runspec.PreservedDir when the build kept it there
// (preserveVolume), else at root.
func preservedRoot(root, build string) string {
	dir := filepath.Join(root, runspec.PreservedDir)
	if b, err := os.ReadFile(filepath.Join(dir, runspec.PreservedBuild)); err == nil && build != "" && string(b) == build {
		return dir
	}
	return root
}

// tidyVolume does away with every entry at the root of a build volume but the task
// caches (and the file system's lost+found), through drop, and deletes the leftovers of
// interrupted cache saves.
func tidyVolume(root string, drop func(name string) error) error {
	entries, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("cleaning the build volume: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if e.Name() == runspec.CachesDir || e.Name() == "lost+found" {
			continue
		}
		errs = append(errs, drop(e.Name()))
	}
	steps, err := os.ReadDir(filepath.Join(root, runspec.CachesDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, step := range steps {
		errs = append(errs, removeSaveLeftovers(filepath.Join(root, runspec.CachesDir, step.Name())))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cleaning the build volume: %w", err)
	}
	return nil
}

// removeSaveLeftovers deletes <cache>.next-<plan> and <cache>.old-<plan> beside a cache
// <cache> of a step (saveCaches' temporaries, left by a pod that died while saving): the
// next build's step has the same plan ID, and could not rename its cache onto them.
func removeSaveLeftovers(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	caches := map[string]bool{}
	for _, e := range entries {
		caches[e.Name()] = true
	}
	var errs []error
	for _, e := range entries {
		if leftover(e.Name(), caches) {
			errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}

// leftover says whether name is <cache>.next-<plan> or <cache>.old-<plan> for one of the
// caches (escaped names may themselves contain the separators).
func leftover(name string, caches map[string]bool) bool {
	for _, sep := range []string{".next-", ".old-"} {
		for i := 0; ; {
			j := strings.Index(name[i:], sep)
			if j < 0 {
				break
			}
			if i+j > 0 && caches[name[:i+j]] {
				return true
			}
			i += j + 1
		}
	}
	return false
}

package outdir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// File is one file of the set Replace writes.
type File struct {
	// Name is the file's name in the directory, a base name.
	Name string
	Data []byte
	Perm fs.FileMode
}

// fileSystem is what Replace does to the file system that matters to its promise, one call
// per effect, so that a test can make any of them fail part-way. WriteFile, Rename and Link
// behave as the os functions of those names, except that WriteFile creates a new file
// (it fails if name exists) and gives it exactly perm whatever the umask; prepare syncs
// the files it wrote all at once. Exchange swaps two paths in one step or fails having
// changed nothing.
type fileSystem interface {
	WriteFile(name string, data []byte, perm fs.FileMode) error
	Rename(oldpath, newpath string) error
	Link(oldname, newname string) error
	Exchange(a, b string) error
}

type osFS struct{}

var _ fileSystem = osFS{}

func (osFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (osFS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }
func (osFS) Link(oldname, newname string) error   { return os.Link(oldname, newname) }
func (osFS) Exchange(a, b string) error           { return exchange(a, b) }

// stagingPrefix starts the name of the directory Replace prepares the files in when it
// cannot swap the whole directory: hidden, so that `kubectl apply -f DIR` skips it should
// it be left over from a crash.
const stagingPrefix = ".concourse-tekton-"

// errNoSwap says the directory cannot be swapped in one step here (no RENAME_EXCHANGE, a
// mount point, a parent one cannot write to, files one cannot hard-link): Replace then
// replaces the files one by one.
var errNoSwap = errors.New("cannot swap the directory")

// Replace makes dir hold files, in place of the files of the same names there and of the
// files named in remove, and leaves everything else in dir as it was. Either all of it
// happens or, when it fails or ctx ends before it is committed, dir is as it was; once
// committed it goes to its end, whatever ctx says. Killed part-way, the next Replace of
// dir finishes what was committed and removes what was not (recoverLeftovers).
//
// A directory that does not exist is prepared beside it and renamed into place. One that
// holds no subdirectory is swapped with a prepared copy in one step (renameat2
// RENAME_EXCHANGE on Linux), the entries kept carried over as hard links, so that a reader
// sees either the old set or the new one; a process inside the old directory (its working
// directory, a watch on it) is left with the old one, removed. Otherwise (the working
// directory, or where a swap cannot be done) the new files are prepared inside dir and
// renamed into place one by one, the old ones moved aside, and on a failure everything
// done is undone: dir ends as it was, but a reader may see a mix of old and new while it
// happens. The renames are committed by a journal, synced before the first of them.
func Replace(ctx context.Context, dir string, files []File, remove []string) error {
	return replace(ctx, osFS{}, dir, files, remove)
}

func replace(ctx context.Context, fsys fileSystem, dir string, files []File, remove []string) error {
	if err := checkNames(files, remove); err != nil {
		return err
	}
	real := dir
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		// Replace what a symbolic link points to, and keep the link.
		real = resolved
	}
	real, err := filepath.Abs(real)
	if err != nil {
		return err
	}
	info, err := os.Stat(real)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := recoverLeftovers(fsys, real, false); err != nil {
			return err
		}
		return create(ctx, fsys, real, files)
	case err != nil:
		return err
	case !info.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	if err := recoverLeftovers(fsys, real, true); err != nil {
		return err
	}
	entries, err := os.ReadDir(real)
	if err != nil {
		return err
	}
	existing := map[string]fs.DirEntry{}
	listed := map[string]bool{}
	hasSubdir := false
	for _, e := range entries {
		existing[e.Name()] = e
		listed[e.Name()] = true
		hasSubdir = hasSubdir || e.IsDir()
	}
	writes := map[string]bool{}
	for _, f := range files {
		writes[f.Name] = true
		if e, ok := existing[f.Name]; ok && !e.Type().IsRegular() {
			return fmt.Errorf("%s is in the way: it is not a regular file; move it away", filepath.Join(dir, f.Name))
		}
	}
	var removing []string
	for _, name := range remove {
		e, ok := existing[name]
		if !ok || writes[name] {
			continue
		}
		if !e.Type().IsRegular() {
			return fmt.Errorf("cannot remove %s: it is not a regular file", filepath.Join(dir, name))
		}
		removing = append(removing, name)
	}
	// A directory one works in is not swapped: the shell that ran `convert -o .` would be
	// left in the old one, deleted.
	if cwd, err := os.Stat("."); !hasSubdir && (err != nil || !os.SameFile(cwd, info)) {
		var kept []string
		for _, e := range entries {
			if !writes[e.Name()] && !contains(removing, e.Name()) {
				kept = append(kept, e.Name())
			}
		}
		err := swap(ctx, fsys, real, info, files, kept, listed)
		if !errors.Is(err, errNoSwap) {
			return err
		}
	}
	return inPlace(ctx, fsys, real, files, removing)
}

func checkNames(files []File, remove []string) error {
	seen := map[string]bool{}
	for _, f := range files {
		if err := checkName(f.Name); err != nil {
			return err
		}
		if seen[f.Name] {
			return fmt.Errorf("two files named %s", f.Name)
		}
		seen[f.Name] = true
	}
	for _, name := range remove {
		if err := checkName(name); err != nil {
			return err
		}
	}
	return nil
}

func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, filepath.Separator) || strings.ContainsRune(name, '/') || strings.HasPrefix(name, stagingPrefix) {
		return fmt.Errorf("invalid file name %q", name)
	}
	return nil
}

// create writes a directory that does not exist yet: prepared beside it, then renamed.
func create(ctx context.Context, fsys fileSystem, dir string, files []File) error {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	stage, err := os.MkdirTemp(parent, siblingStage(dir))
	if err != nil {
		return err
	}
	if err := prepare(fsys, stage, 0o755, files); err != nil {
		os.RemoveAll(stage)
		return err
	}
	if err := ctx.Err(); err != nil {
		os.RemoveAll(stage)
		return err
	}
	if err := fsys.Rename(stage, dir); err != nil {
		os.RemoveAll(stage)
		return err
	}
	return nil
}

// swap prepares the new content of dir beside it, the entries kept as hard links to
// theirs, and exchanges the two directories. It returns an error wrapping errNoSwap, dir
// untouched, when that cannot be done here. listed are the names dir held when its
// entries were sorted into kept, written over and removed.
func swap(ctx context.Context, fsys fileSystem, dir string, info fs.FileInfo, files []File, kept []string, listed map[string]bool) error {
	stage, err := os.MkdirTemp(filepath.Dir(dir), siblingStage(dir))
	if err != nil {
		return fmt.Errorf("%w: %v", errNoSwap, err)
	}
	// Not a deferred removal: a process killed part-way runs none, and the test that
	// kills it must see what it leaves (the next Replace removes it).
	fail := func(err error) error {
		os.RemoveAll(stage)
		return err
	}
	// The links first: where they cannot be made (another file system, a file of
	// another user under protected_hardlinks) nothing has been written yet.
	for _, name := range kept {
		if err := fsys.Link(filepath.Join(dir, name), filepath.Join(stage, name)); err != nil {
			return fail(fmt.Errorf("%w: %v", errNoSwap, err))
		}
	}
	copyOwner(stage, info)
	if err := prepare(fsys, stage, info.Mode()&(fs.ModePerm|fs.ModeSetgid|fs.ModeSticky), files); err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	if err := fsys.Exchange(stage, dir); err != nil {
		return fail(fmt.Errorf("%w: %v", errNoSwap, err))
	}
	// stage now holds the old entries. One created in dir since it was listed is moved
	// into the new dir rather than lost with the rest.
	old, _ := os.ReadDir(stage)
	for _, e := range old {
		if listed[e.Name()] {
			continue
		}
		if _, err := os.Lstat(filepath.Join(dir, e.Name())); errors.Is(err, fs.ErrNotExist) {
			os.Rename(filepath.Join(stage, e.Name()), filepath.Join(dir, e.Name()))
		}
	}
	os.RemoveAll(stage)
	return nil
}

// inPlace prepares the files in a hidden directory inside dir, then renames them into
// place one by one, moving aside the files they replace and those removed, and on a
// failure renames everything back. Its journal, written and synced once the files are,
// commits the renames: killed after it, the next Replace of dir makes them
// (recoverLeftovers).
func inPlace(ctx context.Context, fsys fileSystem, dir string, files []File, remove []string) error {
	work, err := os.MkdirTemp(dir, stagingPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return err
	}
	newDir, oldDir := filepath.Join(work, "new"), filepath.Join(work, "old")
	for _, d := range []string{newDir, oldDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			os.RemoveAll(work)
			return err
		}
	}
	if err := prepare(fsys, newDir, 0o700, files); err != nil {
		os.RemoveAll(work)
		return err
	}
	if err := ctx.Err(); err != nil {
		os.RemoveAll(work)
		return err
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.Name
	}
	if err := writeJournal(fsys, work, journal{Files: names, Remove: remove}); err != nil {
		os.RemoveAll(work)
		return err
	}
	type move struct{ from, to string }
	var done []move
	rename := func(from, to string) error {
		if err := fsys.Rename(from, to); err != nil {
			return err
		}
		done = append(done, move{from, to})
		return nil
	}
	commit := func() error {
		for _, f := range files {
			target := filepath.Join(dir, f.Name)
			if _, err := os.Lstat(target); err == nil {
				if err := rename(target, filepath.Join(oldDir, f.Name)); err != nil {
					return err
				}
			}
			if err := rename(filepath.Join(newDir, f.Name), target); err != nil {
				return err
			}
		}
		for _, name := range remove {
			if err := rename(filepath.Join(dir, name), filepath.Join(oldDir, name)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := commit(); err != nil {
		for i := len(done) - 1; i >= 0; i-- {
			if rerr := fsys.Rename(done[i].to, done[i].from); rerr != nil {
				return fmt.Errorf("%w; then putting the earlier files back failed (%v): they are in %s", err, rerr, oldDir)
			}
		}
		os.RemoveAll(work)
		return err
	}
	os.RemoveAll(work)
	return nil
}

// prepare writes files into the new directory dir, gives it perm, and syncs them all.
func prepare(fsys fileSystem, dir string, perm fs.FileMode, files []File) error {
	names := make([]string, len(files))
	for i, f := range files {
		if err := fsys.WriteFile(filepath.Join(dir, f.Name), f.Data, f.Perm); err != nil {
			return err
		}
		names[i] = f.Name
	}
	if err := os.Chmod(dir, perm); err != nil {
		return err
	}
	return syncAll(dir, names)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

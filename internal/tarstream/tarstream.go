package tarstream

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// permMask keeps the permission bits a stream carries.
const permMask = 0o777

// Write archives the tree at root into w. With files nil, everything under root goes, in
// lexical order; otherwise the named paths (slash-separated, relative to root; a
// directory brings what it holds) and the directories that lead to them, sorted. Names
// in the stream are relative, `./`-free; symbolic links are stored as links.
func Write(w io.Writer, root string, files []string) error {
	tw := tar.NewWriter(w)
	wrote := map[string]bool{}
	add := func(name string) error {
		if name == "." || wrote[name] {
			return nil
		}
		wrote[name] = true
		return addEntry(tw, root, name)
	}
	if files == nil {
		files = []string{"."}
	}
	sorted := slices.Clone(files)
	slices.Sort(sorted)
	for _, f := range sorted {
		f = path.Clean(filepath.ToSlash(f))
		if f == ".." || strings.HasPrefix(f, "../") || path.IsAbs(f) {
			return fmt.Errorf("%s is outside %s", f, root)
		}
		// The directories that lead to it first.
		if dir := path.Dir(f); dir != "." {
			parts := strings.Split(dir, "/")
			for i := range parts {
				if err := add(strings.Join(parts[:i+1], "/")); err != nil {
					return err
				}
			}
		}
		info, err := os.Lstat(filepath.Join(root, filepath.FromSlash(f)))
		if errors.Is(err, fs.ErrNotExist) && len(files) > 1 {
			continue // listed, then deleted: as git ls-files can say
		}
		if err != nil {
			return err
		}
		if !info.IsDir() {
			if err := add(f); err != nil {
				return err
			}
			continue
		}
		err = filepath.WalkDir(filepath.Join(root, filepath.FromSlash(f)), func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			return add(filepath.ToSlash(rel))
		})
		if err != nil {
			return err
		}
	}
	return tw.Close()
}

// addEntry writes one file, directory or link of the tree.
func addEntry(tw *tar.Writer, root, name string) error {
	full := filepath.Join(root, filepath.FromSlash(name))
	info, err := os.Lstat(full)
	if err != nil {
		return err
	}
	link := ""
	if info.Mode()&fs.ModeSymlink != 0 {
		if link, err = os.Readlink(full); err != nil {
			return err
		}
	}
	hdr, err := tar.FileInfoHeader(info, link)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	hdr.Name = name
	if info.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
	hdr.Mode &= permMask
	hdr.ModTime = info.ModTime().Truncate(time.Second)
	hdr.AccessTime, hdr.ChangeTime = time.Time{}, time.Time{}
	hdr.Format = tar.FormatPAX
	switch {
	case info.Mode().IsRegular(), info.IsDir(), info.Mode()&fs.ModeSymlink != 0:
	default:
		return nil // devices, sockets and pipes do not travel
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(full)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// Extract unpacks the tar stream r into dir, which it creates. Every name is resolved
// inside dir (os.Root): a name with `..`, an absolute name, or a path through a symbolic
// link that leads out of dir is an error, and nothing is written outside dir. Regular
// files, directories, symbolic and hard links are made; other entries are skipped.
func Extract(r io.Reader, dir string) error {
	return extract(r, dir, false)
}

// ExtractOwned is Extract keeping, besides, what Write leaves out and a container's own
// file system needs: each entry's owner (the caller must be allowed to give it), and the
// setuid, setgid and sticky bits.
func ExtractOwned(r io.Reader, dir string) error {
	return extract(r, dir, true)
}

func extract(r io.Reader, dir string, owned bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(r)
	type dirTime struct {
		name string
		t    time.Time
	}
	var dirs []dirTime
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the archive: %w", err)
		}
		name, err := entryName(hdr.Name)
		if err != nil {
			return err
		}
		if name == "." {
			if hdr.Typeflag == tar.TypeDir {
				dirs = append(dirs, dirTime{".", hdr.ModTime})
			}
			continue
		}
		mode := fs.FileMode(hdr.Mode) & permMask
		if owned {
			mode = hdr.FileInfo().Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		}
		// Owned, the owner is given before the mode: a change of owner clears the setuid
		// and setgid bits.
		chown := func() error {
			if !owned {
				return nil
			}
			return root.Lchown(name, hdr.Uid, hdr.Gid)
		}
		if parent := path.Dir(name); parent != "." {
			if err := root.MkdirAll(parent, 0o755); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if err := chown(); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if err := root.Chmod(name, mode); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			dirs = append(dirs, dirTime{name, hdr.ModTime})
		case tar.TypeReg:
			if err := writeFile(root, name, mode, tr, chown); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			_ = root.Chtimes(name, hdr.ModTime, hdr.ModTime)
		case tar.TypeSymlink:
			_ = root.Remove(name)
			if err := root.Symlink(hdr.Linkname, name); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if err := chown(); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		case tar.TypeLink:
			target, err := entryName(hdr.Linkname)
			if err != nil {
				return err
			}
			_ = root.Remove(name)
			if err := root.Link(target, name); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	// Directories last, deepest first: writing in them changed their times.
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = root.Chtimes(dirs[i].name, dirs[i].t, dirs[i].t)
	}
	return nil
}

// entryName is a stream's name made relative and clean; it refuses names that climb out.
func entryName(name string) (string, error) {
	clean := path.Clean(strings.TrimPrefix(name, "/"))
	if clean == ".." || strings.HasPrefix(clean, "../") || strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("the archive names %q, outside the directory it is unpacked in", name)
	}
	return clean, nil
}

func writeFile(root *os.Root, name string, mode fs.FileMode, r io.Reader, chown func() error) error {
	// A link or a file of the same name, from an earlier entry, is replaced, not written
	// through.
	if info, err := root.Lstat(name); err == nil && !info.Mode().IsRegular() {
		if err := root.Remove(name); err != nil {
			return err
		}
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode.Perm()|0o200)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := chown(); err != nil {
		return err
	}
	return root.Chmod(name, mode)
}

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
	switch {
	case info.Mode().IsRegular(), info.IsDir(), info.Mode()&fs.ModeSymlink != 0:
	default:
		return nil // devices, sockets and pipes do not travel
	}
	hdr, err := Header(full, name, info)
	if err != nil {
		return err
	}
	hdr.Uid, hdr.Gid = 0, 0
	hdr.Mode &= permMask
	hdr.ModTime = info.ModTime().Truncate(time.Second)
	return WriteEntry(tw, hdr, full)
}

// Header is the PAX header of the file at full, of info, named name (with a slash after a
// directory's name): no user or group names, no access or change times, which reading
// the tree changes.
func Header(full, name string, info fs.FileInfo) (*tar.Header, error) {
	link := ""
	if info.Mode()&fs.ModeSymlink != 0 {
		var err error
		if link, err = os.Readlink(full); err != nil {
			return nil, err
		}
	}
	hdr, err := tar.FileInfoHeader(info, link)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	hdr.Name = name
	if info.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uname, hdr.Gname = "", ""
	hdr.AccessTime, hdr.ChangeTime = time.Time{}, time.Time{}
	hdr.Format = tar.FormatPAX
	return hdr, nil
}

// WriteEntry writes hdr, then, when it is a regular file's, the content of the file at
// full.
func WriteEntry(tw *tar.Writer, hdr *tar.Header, full string) error {
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", hdr.Name, err)
	}
	if hdr.Typeflag != tar.TypeReg {
		return nil
	}
	f, err := os.Open(full)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("%s: %w", hdr.Name, err)
	}
	return nil
}

// Extract unpacks the tar stream r into dir, which it creates. Every name is resolved
// inside dir (os.Root): a name with `..`, an absolute name, or a path through a symbolic
// link that leads out of dir is an error, and nothing is written outside dir. Regular
// files, directories, symbolic and hard links are made; other entries are skipped. A
// file, symbolic link or hard link already at an entry's name, in dir as it was or made
// by an earlier entry, is replaced, never written through.
//
// A stream over defaultLimits (an entry of more than 64 GiB, which a sparse file of a
// few bytes of stream may claim to be, more than 4,000,000 entries, or a name more than
// 256 levels deep) is refused at the entry that goes over, before it is written.
func Extract(r io.Reader, dir string) error {
	return extract(r, dir, false, defaultLimits)
}

// ExtractOwned is Extract keeping, besides, what Write leaves out and a container's own
// file system needs: each entry's owner (the caller must be allowed to give it), and the
// setuid, setgid and sticky bits.
func ExtractOwned(r io.Reader, dir string) error {
	return extract(r, dir, true, defaultLimits)
}

// limits bound what a stream may make: the size of an entry, the number of entries, and
// how many levels deep a name is.
type limits struct {
	entrySize int64
	entries   int
	depth     int
}

// defaultLimits are far above an artifact's (a repository of 100,000 files, an image's
// tarball of a few GiB) and below what fills a disk or a file system's inodes by
// surprise.
var defaultLimits = limits{entrySize: 64 << 30, entries: 4_000_000, depth: 256}

// check refuses the entry name of hdr, the n-th of its stream, when it goes over l.
func (l limits) check(hdr *tar.Header, name string, n int) error {
	if n > l.entries {
		return fmt.Errorf("the archive has more than %d entries, the limit", l.entries)
	}
	if depth := strings.Count(name, "/") + 1; depth > l.depth {
		return fmt.Errorf("the archive's entry %q is %d levels deep, over the limit of %d", short(name), depth, l.depth)
	}
	if hdr.Size > l.entrySize {
		return fmt.Errorf("the archive's entry %q is %s, over the limit of %s for an entry", short(name), byteSize(hdr.Size), byteSize(l.entrySize))
	}
	return nil
}

// short is a name cut to a length an error can show.
func short(name string) string {
	if len(name) > 200 {
		return name[:100] + "..." + name[len(name)-97:]
	}
	return name
}

// byteSize renders a size the way the limits are written: 64 GiB, 1 MiB, 1048577 bytes.
func byteSize(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

func extract(r io.Reader, dir string, owned bool, lim limits) error {
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
	for n := 1; ; n++ {
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
		if err := lim.check(hdr, name, n); err != nil {
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
	// A link of the same name, in the directory or from an earlier entry, is replaced,
	// not written through: a symbolic link, or a file with another name (a hard link,
	// whose other name may be anywhere). A file of its own is written over, as a file
	// mounted in a container must be.
	if info, err := root.Lstat(name); err == nil && (!info.Mode().IsRegular() || linked(info)) {
		if err := root.Remove(name); err != nil {
			return fmt.Errorf("replacing what is there: %w", err)
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

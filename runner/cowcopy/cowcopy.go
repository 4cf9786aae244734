package cowcopy

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// ficlone is the FICLONE ioctl: _IOW(0x94, 9, int).
const ficlone = 0x40049409

// smallFile is the size under which a file is copied with a known length.
const smallFile = 1 << 20

// maxBatch bounds a batch of files, so that a large directory is still shared.
const maxBatch = 64

// Stats tells what a copy did.
type Stats struct {
	Files  int64
	Bytes  int64
	Cloned int64
}

// Options tune a copy; the zero value is the default.
type Options struct {
	// Workers is how many files are copied at once; zero means one per CPU (measured:
	// more only contend for the directory locks of file creation).
	Workers int
	// NoClone disables FICLONE, for benchmarks of the fallback.
	NoClone bool
	// Owner, when set, owns everything in the copy instead of the originals' owners, as
	// baggageclaim makes a volume for a container whose user is not root. It needs a
	// root copier. Each entry is given away as it is made: no walk of its own.
	Owner *Owner
}

// Owner is the user and group a copy is given to.
type Owner struct{ UID, GID int }

// of is who the copy of an entry belongs to: the owner of the copy, else the original's.
// ok is false when there is no one to give it to (no owner and no stat).
func (o *Owner) of(info fs.FileInfo) (uid, gid int, ok bool) {
	if o != nil {
		return o.UID, o.GID, true
	}
	if st, isStat := info.Sys().(*syscall.Stat_t); isStat {
		return int(st.Uid), int(st.Gid), true
	}
	return 0, 0, false
}

// Tree copies the directory src to dst, which must not exist yet (its parent may not
// either).
func Tree(src, dst string, opt Options) (Stats, error) {
	info, err := os.Lstat(src)
	if err != nil {
		return Stats{}, fmt.Errorf("copying %s: %w", src, err)
	}
	if !info.IsDir() {
		return Stats{}, fmt.Errorf("copying %s: not a directory", src)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return Stats{}, fmt.Errorf("copying %s: %w", src, err)
	}
	c := &copier{noClone: opt.NoClone, owner: opt.Owner}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// Files go to the workers in batches of one directory: creating files in one
	// directory is serialized by the filesystem, so workers do better in different ones.
	jobs := make(chan []job, 2*workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for batch := range jobs {
				for _, j := range batch {
					if err := c.file(j); err != nil {
						c.fail(err)
					}
				}
			}
		}()
	}
	var batch []job
	flush := func() {
		if len(batch) > 0 {
			jobs <- batch
			batch = nil
		}
	}
	var dirs []job
	walkErr := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if c.failed() {
			return filepath.SkipAll
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		j := job{src: path, dst: filepath.Join(dst, rel), info: info}
		switch mode := info.Mode(); {
		case mode.IsDir():
			// Owner write and search for now, so that the walk can fill it; the real mode
			// comes last.
			if err := os.Mkdir(j.dst, 0o700); err != nil {
				return err
			}
			dirs = append(dirs, j)
		case mode.IsRegular():
			if len(batch) > 0 && (filepath.Dir(batch[0].src) != filepath.Dir(path) || len(batch) == maxBatch) {
				flush()
			}
			batch = append(batch, j)
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, j.dst); err != nil {
				return err
			}
			return c.finish(j, false)
		case mode&fs.ModeSocket != 0:
			// A socket is only meaningful to the process that bound it.
		default:
			return c.special(j)
		}
		return nil
	})
	flush()
	close(jobs)
	wg.Wait()
	if walkErr != nil {
		c.fail(walkErr)
	}
	if err := c.err(); err != nil {
		return c.stats(), fmt.Errorf("copying %s to %s: %w", src, dst, err)
	}
	// Deepest first: filling a directory changes its mtime.
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := c.finish(dirs[i], true); err != nil {
			return c.stats(), fmt.Errorf("copying %s to %s: %w", src, dst, err)
		}
	}
	return c.stats(), nil
}

type job struct {
	src, dst string
	info     fs.FileInfo
}

type copier struct {
	noClone   bool
	owner     *Owner
	cantClone atomic.Bool
	files     atomic.Int64
	bytes     atomic.Int64
	cloned    atomic.Int64
	mu        sync.Mutex
	first     error
	hasErr    atomic.Bool
}

func (c *copier) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.first == nil {
		c.first = err
		c.hasErr.Store(true)
	}
}

func (c *copier) failed() bool { return c.hasErr.Load() }

func (c *copier) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first
}

func (c *copier) stats() Stats {
	return Stats{Files: c.files.Load(), Bytes: c.bytes.Load(), Cloned: c.cloned.Load()}
}

func (c *copier) file(j job) error {
	in, err := os.Open(j.src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(j.dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	cloned := false
	if !c.noClone && !c.cantClone.Load() && j.info.Size() > 0 {
		cloned = c.clone(out, in)
	}
	if !cloned {
		// A small file is bounded by the size seen by the walk, so that copy_file_range
		// stops without the extra call that finds the end; large files keep the kernel's
		// fastest path.
		var src io.Reader = in
		if j.info.Size() < smallFile {
			src = &io.LimitedReader{R: in, N: j.info.Size()}
		}
		if _, err := io.Copy(out, src); err != nil {
			out.Close()
			return fmt.Errorf("copying %s: %w", j.src, err)
		}
	} else {
		c.cloned.Add(1)
	}
	err = c.finishFile(out, j.info)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copying %s: %w", j.src, err)
	}
	c.files.Add(1)
	c.bytes.Add(j.info.Size())
	return nil
}

// finishFile is finish through an open file, which saves three path lookups per file.
func (c *copier) finishFile(f *os.File, info fs.FileInfo) error {
	// A new file is already ours: chown only when it belongs to someone else.
	if uid, gid, ok := c.owner.of(info); ok && os.Geteuid() == 0 && (uid != os.Geteuid() || gid != os.Getegid()) {
		if err := f.Chown(uid, gid); err != nil {
			return err
		}
	}
	if err := f.Chmod(info.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)); err != nil {
		return err
	}
	ts := times(info)
	// utimensat with a NULL path sets the times of the descriptor itself (futimens).
	_, _, errno := syscall.Syscall6(syscall.SYS_UTIMENSAT, f.Fd(), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("setting the times of %s: %w", f.Name(), errno)
	}
	return nil
}

func times(info fs.FileInfo) [2]syscall.Timespec {
	atime := info.ModTime()
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		atime = time.Unix(st.Atim.Sec, st.Atim.Nsec)
	}
	return [2]syscall.Timespec{syscall.NsecToTimespec(atime.UnixNano()), syscall.NsecToTimespec(info.ModTime().UnixNano())}
}

// clone shares in's extents with out; when the filesystem cannot, it remembers so, and
// the caller copies.
func (c *copier) clone(out, in *os.File) bool {
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, out.Fd(), ficlone, in.Fd())
	if errno == 0 {
		return true
	}
	switch errno {
	case syscall.EOPNOTSUPP, syscall.ENOTTY, syscall.EXDEV, syscall.EINVAL, syscall.ENOSYS, syscall.EPERM:
		c.cantClone.Store(true)
	}
	return false
}

// special recreates a device node or FIFO where permitted.
func (c *copier) special(j job) error {
	st, ok := j.info.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if err := syscall.Mknod(j.dst, st.Mode, int(st.Rdev)); err != nil {
		if errors.Is(err, syscall.EPERM) {
			return nil
		}
		return fmt.Errorf("creating %s: %w", j.dst, err)
	}
	return c.finish(j, true)
}

// finish gives the copy its owner (where we may), mode and times.
func (c *copier) finish(j job, chmod bool) error {
	if uid, gid, ok := c.owner.of(j.info); ok && os.Geteuid() == 0 {
		if err := os.Lchown(j.dst, uid, gid); err != nil {
			return err
		}
	}
	if chmod {
		// After chown, which clears setuid and setgid bits.
		if err := os.Chmod(j.dst, j.info.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
			return err
		}
	}
	return lutimes(j.dst, j.info)
}

// lutimes sets the access and modification times of path, not of what a link points to.
func lutimes(path string, info fs.FileInfo) error {
	ts := times(info)
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return err
	}
	const atSymlinkNofollow = 0x100
	atFdcwd := -100
	_, _, errno := syscall.Syscall6(syscall.SYS_UTIMENSAT, uintptr(atFdcwd), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&ts[0])), atSymlinkNofollow, 0, 0)
	if errno != 0 {
		return fmt.Errorf("setting the times of %s: %w", path, errno)
	}
	return nil
}

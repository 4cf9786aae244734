//go:build !linux

package outdir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// exchange has no atomic form here: Replace replaces the files one by one instead.
func exchange(a, b string) error {
	return &os.LinkError{Op: "exchange", Old: a, New: b, Err: errors.ErrUnsupported}
}

func copyOwner(string, fs.FileInfo) {}

// syncAll makes the files written in dir, and dir, durable, one by one.
func syncAll(dir string, names []string) error {
	for _, name := range names {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR, 0)
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	return nil
}

package site

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"syscall"
)

// osDirs is the local filesystem, for mkdirAll.
type osDirs struct{}

func (osDirs) Stat(p string) (fs.FileInfo, error)     { return os.Stat(p) }
func (osDirs) Mkdir(p string) error                   { return os.Mkdir(p, 0o700) }
func (osDirs) Chmod(p string, mode fs.FileMode) error { return os.Chmod(p, mode) }

// localOp runs a file operation when ctx is live and names it in its error.
func localOp(ctx context.Context, op, p string, fn func() error) error {
	if err := checkPath(p); err != nil {
		return fmt.Errorf("local %s: %w", op, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("local %s %s: %w", op, p, err)
	}
	if err := fn(); err != nil {
		return fmt.Errorf("local %s %s: %w", op, p, err)
	}
	return nil
}

// MkdirAll creates path and its missing parents with exactly mode perm.
func (l *Local) MkdirAll(ctx context.Context, p string, perm fs.FileMode) error {
	return localOp(ctx, "mkdir", p, func() error { return mkdirAll(osDirs{}, p, perm) })
}

// WriteFile writes data to a temporary file beside p, gives it mode perm and
// renames it over p.
func (l *Local) WriteFile(ctx context.Context, p string, data []byte, perm fs.FileMode) error {
	return localOp(ctx, "write", p, func() error {
		dir, base := path.Split(p)
		f, err := os.CreateTemp(dir, "."+base+".tmp-*") // mode 0600 until the chmod
		if err != nil {
			return err
		}
		tmp := f.Name()
		err = errors.Join(f.Chmod(perm), write(f, data), f.Close())
		if err == nil {
			err = os.Rename(tmp, p)
		}
		if err != nil {
			os.Remove(tmp)
		}
		return err
	})
}

func write(f *os.File, data []byte) error {
	_, err := f.Write(data)
	return err
}

// ReadAt reads up to n bytes of the regular file p from offset off. It
// opens p with O_NOFOLLOW, so that a symbolic link is refused by open
// itself, and O_NONBLOCK, so that a named pipe does not block the open, and
// then checks on the open file (fstat) that it is a regular file: no swap of
// p between a check and the open can make it read something else.
func (l *Local) ReadAt(ctx context.Context, p string, off int64, n int) ([]byte, error) {
	var data []byte
	err := localOp(ctx, "read", p, func() error {
		if err := checkReadAt(off, n); err != nil {
			return err
		}
		f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != nil {
			return openError(err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if err := CheckRegular(fi); err != nil {
			return err
		}
		data, err = readAt(f, off, n)
		return err
	})
	return data, err
}

// Stat describes p itself, without following a symbolic link.
func (l *Local) Stat(ctx context.Context, p string) (fs.FileInfo, error) {
	var fi fs.FileInfo
	err := localOp(ctx, "stat", p, func() (err error) {
		fi, err = os.Lstat(p)
		return err
	})
	return fi, err
}

// RemoveAll removes p and everything under it.
func (l *Local) RemoveAll(ctx context.Context, p string) error {
	return localOp(ctx, "remove", p, func() error {
		if p == "/" {
			return errors.New("refusing to remove /")
		}
		return os.RemoveAll(p)
	})
}

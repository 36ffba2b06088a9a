package site

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	"github.com/pkg/sftp"
)

// fileOp runs fn with the connection's SFTP client and names the operation
// in its error. File operations can be repeated, so one that failed because
// the connection broke is run again once on a new connection. ctx bounds
// the wait; fn itself ends when it finishes or the connection closes.
func (s *SSH) fileOp(ctx context.Context, op, p string, fn func(*sftp.Client) error) error {
	if err := checkPath(p); err != nil {
		return fmt.Errorf("sftp %s: %w", op, err)
	}
	for attempt := 1; ; attempt++ {
		c, err := s.conn(ctx)
		if err != nil {
			return fmt.Errorf("sftp %s %s: %w", op, p, err)
		}
		done := make(chan error, 1)
		if !s.spawn(func() {
			cl, err := c.sftpClient()
			if err == nil {
				err = fn(cl)
			}
			done <- err
		}) {
			return fmt.Errorf("sftp %s %s: %w", op, p, ErrClosed)
		}
		select {
		case err = <-done:
		case <-ctx.Done():
			return fmt.Errorf("sftp %s %s: %w", op, p, ctx.Err())
		}
		switch {
		case err == nil:
			return nil
		case attempt == 1 && !fileError(err) && s.lost(ctx, c):
			continue
		case errors.Is(err, ErrConnLost) || c.isDead():
			return fmt.Errorf("sftp %s %s: %w: %w", op, p, ErrConnLost, err)
		default:
			return fmt.Errorf("sftp %s %s: %w", op, p, err)
		}
	}
}

// fileError reports an error that the SFTP server gave about a file, as
// opposed to one from a broken session.
func fileError(err error) bool {
	var status *sftp.StatusError
	return errors.As(err, &status) || errors.Is(err, fs.ErrNotExist) ||
		errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrExist)
}

// MkdirAll creates p and its missing parents with exactly mode perm.
func (s *SSH) MkdirAll(ctx context.Context, p string, perm fs.FileMode) error {
	return s.fileOp(ctx, "mkdir", p, func(cl *sftp.Client) error {
		return mkdirAll(cl, p, perm)
	})
}

// WriteFile writes data to a new temporary file beside p, gives it mode perm
// before any data is written, and renames it over p (atomically where the
// server offers posix-rename@openssh.com). Until the chmod the empty file
// has the server's default mode: secrets belong in private directories.
func (s *SSH) WriteFile(ctx context.Context, p string, data []byte, perm fs.FileMode) error {
	return s.fileOp(ctx, "write", p, func(cl *sftp.Client) error {
		tmp := tempName(p)
		f, err := cl.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
		if err != nil {
			return err
		}
		err = f.Chmod(perm)
		if err == nil {
			_, err = f.ReadFrom(bytes.NewReader(data))
		}
		err = errors.Join(err, f.Close())
		if err == nil {
			err = rename(cl, tmp, p)
		}
		if err != nil {
			cl.Remove(tmp)
		}
		return err
	})
}

// rename moves oldname over newname.
func rename(cl *sftp.Client, oldname, newname string) error {
	if _, ok := cl.HasExtension("posix-rename@openssh.com"); ok {
		return cl.PosixRename(oldname, newname)
	}
	// SFTP version 3 renames refuse an existing target.
	if err := cl.Remove(newname); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return cl.Rename(oldname, newname)
}

// ReadFile reads the whole file.
func (s *SSH) ReadFile(ctx context.Context, p string) ([]byte, error) {
	var buf bytes.Buffer
	err := s.fileOp(ctx, "read", p, func(cl *sftp.Client) error {
		buf.Reset()
		f, err := cl.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteTo(&buf)
		return err
	})
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ReadAt reads up to n bytes of p from offset off.
func (s *SSH) ReadAt(ctx context.Context, p string, off int64, n int) ([]byte, error) {
	if err := checkReadAt(off, n); err != nil {
		return nil, fmt.Errorf("sftp read %s: %w", p, err)
	}
	var data []byte
	err := s.fileOp(ctx, "read", p, func(cl *sftp.Client) error {
		f, err := cl.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		data, err = readAt(f, off, n)
		return err
	})
	return data, err
}

// Stat describes p.
func (s *SSH) Stat(ctx context.Context, p string) (fs.FileInfo, error) {
	var fi fs.FileInfo
	err := s.fileOp(ctx, "stat", p, func(cl *sftp.Client) (err error) {
		fi, err = cl.Stat(p)
		return err
	})
	return fi, err
}

// RemoveAll removes p and everything under it.
func (s *SSH) RemoveAll(ctx context.Context, p string) error {
	return s.fileOp(ctx, "remove", p, func(cl *sftp.Client) error {
		if p == "/" {
			return errors.New("refusing to remove /")
		}
		return removeAll(cl, p)
	})
}

// removeAll removes p and what is under it, without following symbolic
// links; what is already gone is not an error.
func removeAll(cl *sftp.Client, p string) error {
	fi, err := cl.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return ignoreNotExist(cl.Remove(p))
	}
	entries, err := cl.ReadDir(p)
	if err != nil {
		return ignoreNotExist(err)
	}
	for _, e := range entries {
		if err := removeAll(cl, path.Join(p, e.Name())); err != nil {
			return err
		}
	}
	return ignoreNotExist(cl.RemoveDirectory(p))
}

func ignoreNotExist(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

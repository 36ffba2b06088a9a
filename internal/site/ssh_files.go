package site

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

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

// ReadAt reads up to n bytes of the regular file p from offset off: an
// lstat over SFTP, which never opens p, refuses anything but a regular
// file; then GNU dd on the site reads the bytes (ddArgs), as a command in a
// session of its own, bounded by n and by ReadTimeout.
//
// The read is not made over SFTP, because OpenSSH's sftp-server answers one
// request at a time and SFTP's open can ask for neither O_NOFOLLOW nor
// O_NONBLOCK: a job that swaps its log for a named pipe after the lstat
// would have the open wait for a writer, and with it every file operation
// of the connection (keepalives still pass, so nothing would notice). A
// separate SFTP session per read could be abandoned, but its sftp-server
// would stay blocked in open, and sshd keeps the session, one of its
// MaxSessions, until that process ends: a few such reads would use up the
// connection. dd opens with O_NOFOLLOW|O_NONBLOCK, so a link swapped in is
// refused and a pipe read returns at once; the command is killed and its
// session closed when ReadTimeout passes, whatever it waits for.
func (s *SSH) ReadAt(ctx context.Context, p string, off int64, n int) ([]byte, error) {
	if err := checkReadAt(off, n); err != nil {
		return nil, fmt.Errorf("ssh read %s: %w", p, err)
	}
	var fi fs.FileInfo
	err := s.fileOp(ctx, "read", p, func(cl *sftp.Client) (err error) {
		fi, err = cl.Lstat(p)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := CheckRegular(fi); err != nil {
		return nil, fmt.Errorf("ssh read %s: %w", p, err)
	}
	if n == 0 || off >= fi.Size() {
		// Nothing to read yet: a followed log that has not grown costs one
		// lstat and no command.
		return nil, nil
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.ReadTimeout)
	defer cancel()
	data, err := s.run(rctx, n, nil, ddArgs(p, off, n)...)
	switch {
	case err != nil && ctx.Err() == nil && rctx.Err() != nil:
		return nil, fmt.Errorf("ssh read %s: no answer within %v", p, s.cfg.ReadTimeout)
	case err != nil:
		return nil, fmt.Errorf("ssh read %s: %w", p, ddError(err))
	}
	return data, nil
}

// Stat describes p itself, without following a symbolic link.
func (s *SSH) Stat(ctx context.Context, p string) (fs.FileInfo, error) {
	var fi fs.FileInfo
	err := s.fileOp(ctx, "stat", p, func(cl *sftp.Client) (err error) {
		fi, err = cl.Lstat(p)
		return err
	})
	return fi, err
}

// RemoveAll removes p and everything under it with rm -rf on the site,
// which follows no symbolic link. It is one command rather than a walk over
// SFTP: the job can fill its directory with millions of entries, and
// SFTP's readdir would hold every name of a directory in memory at once,
// and then remove them one round trip at a time. rm -rf is idempotent, so
// a command lost with its connection is run once more on a new one.
func (s *SSH) RemoveAll(ctx context.Context, p string) error {
	if err := checkPath(p); err != nil {
		return fmt.Errorf("ssh remove: %w", err)
	}
	if p == "/" {
		return errors.New("ssh remove /: refusing to remove /")
	}
	_, err := s.Run(ctx, nil, "rm", "-rf", "--", p)
	if errors.Is(err, ErrConnLost) && ctx.Err() == nil {
		_, err = s.Run(ctx, nil, "rm", "-rf", "--", p)
	}
	if err != nil {
		return fmt.Errorf("ssh remove %s: %w", p, err)
	}
	return nil
}

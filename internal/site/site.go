// Package site reaches the HPC site: it runs commands and moves files on the
// login node, either over one SSH connection (SSH) or directly on the machine
// the virtual kubelet runs on (Local). Both implement Runner.
package site

import (
	"context"
	"fmt"
	"io"
	"io/fs"
)

// Runner runs commands and moves files on the site.
//
// Paths are absolute paths on the site. A missing file gives an error for
// which errors.Is(err, fs.ErrNotExist) is true.
//
// Every file under a job directory can be written by the job, and by
// anything else that runs as the site account: the job runs as that
// account, so it can replace its log, job.out or job.id, even job.sh or
// job.id written by sluice, with a named pipe, a link to /dev/zero or to
// another pod's files, or gigabytes of data. No file there is trusted, and
// the two calls that look at a file's content or kind are safe on all of
// them:
//
//   - Stat describes the path itself and never follows a symbolic link;
//   - ReadAt reads a regular file only, never more than it is asked for,
//     never blocks on a named pipe, and gives up after a bounded time
//     without stalling any other call.
//
// There is no call that reads a whole file: every reader says how much it
// wants.
type Runner interface {
	// Run runs args[0] with args[1:] as its arguments and returns its
	// standard output. Every argument is quoted: nothing in args is
	// interpreted by a shell. stdin may be nil. A command that ran and
	// exited non-zero returns an *ExitError.
	Run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error)

	// MkdirAll creates path and any missing parents with mode perm.
	MkdirAll(ctx context.Context, path string, perm fs.FileMode) error
	// WriteFile writes data to path, creating or truncating it, and leaves
	// it with exactly mode perm (whatever the umask). The data is written to
	// a temporary file beside path and renamed into place, so whatever was
	// at path (a link, a named pipe) is replaced, never written through.
	WriteFile(ctx context.Context, path string, data []byte, perm fs.FileMode) error
	// ReadAt reads up to n bytes (at most 64 MiB) of path from offset off.
	// A short or empty result at the end of the file is not an error.
	// path must be a regular file, checked without following a symbolic
	// link: anything else gives an error wrapping ErrNotRegular and is
	// never opened in a way that could block. It is safe on paths a job
	// can write.
	ReadAt(ctx context.Context, path string, off int64, n int) ([]byte, error)
	// Stat describes path itself: a symbolic link is described, not
	// followed (lstat). It never opens path.
	Stat(ctx context.Context, path string) (fs.FileInfo, error)
	// RemoveAll removes path and everything under it, without following
	// symbolic links. A missing path is not an error.
	RemoveAll(ctx context.Context, path string) error
}

// ExitError reports a command that ran on the site and exited non-zero.
type ExitError struct {
	Args   []string
	Code   int
	Stderr string
}

func (e *ExitError) Error() string {
	name := "command"
	if len(e.Args) > 0 {
		name = e.Args[0]
	}
	if e.Stderr == "" {
		return fmt.Sprintf("%s: exit status %d", name, e.Code)
	}
	return fmt.Sprintf("%s: exit status %d: %s", name, e.Code, e.Stderr)
}

package relay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Reasons the relay stops on its own, given as the cause of its context.
var (
	ErrParentGone = errors.New("parent process is gone")
	ErrDirGone    = errors.New("socket directory is gone")
)

// watch returns the reason to stop when the parent process is gone or the
// socket directory no longer names the directory dir, opened at start
// (removed, or recreated under the same path as after a requeue), checking
// every cfg.WatchInterval. Holding dir open keeps its inode from being
// reused by a new directory. It returns ctx's cause when ctx ends first.
func watch(ctx context.Context, cfg Config, dir *os.File) error {
	interval := cfg.WatchInterval
	if interval == 0 {
		interval = 500 * time.Millisecond
	}
	var parent *parentProc
	if cfg.ParentPID != 0 {
		parent = openParent(cfg.ParentPID)
		defer parent.close()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if parent != nil && parent.gone() {
			return fmt.Errorf("%w: pid %d", ErrParentGone, cfg.ParentPID)
		}
		if !sameDir(cfg.Dir, dir) {
			return fmt.Errorf("%w: %s", ErrDirGone, cfg.Dir)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
	}
}

// parentProc watches a process through a pidfd, which cannot be fooled by
// the pid's reuse and turns readable once the process has exited, zombie or
// not; without pidfd (Linux before 5.3) through kill(pid, 0).
type parentProc struct {
	pid   int
	pidfd int // -1 without pidfd
}

func openParent(pid int) *parentProc {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		fd = -1
		if errors.Is(err, syscall.ESRCH) {
			return &parentProc{pid: -1, pidfd: -1} // already gone
		}
	}
	return &parentProc{pid: pid, pidfd: fd}
}

func (p *parentProc) gone() bool {
	if p.pid == -1 {
		return true
	}
	if p.pidfd >= 0 {
		fds := []unix.PollFd{{Fd: int32(p.pidfd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		return err == nil && n > 0
	}
	return errors.Is(unix.Kill(p.pid, 0), syscall.ESRCH)
}

func (p *parentProc) close() {
	if p.pidfd >= 0 {
		unix.Close(p.pidfd)
	}
}

// sameDir reports whether path still names the open directory dir.
func sameDir(path string, dir *os.File) bool {
	held, err := dir.Stat()
	if err != nil {
		return false
	}
	if st, ok := held.Sys().(*syscall.Stat_t); ok && st.Nlink == 0 {
		return false // removed, though something else may hold it open
	}
	now, err := os.Stat(path)
	return err == nil && os.SameFile(now, held)
}

// fileOwner returns the uid owning the file fi describes.
func fileOwner(fi os.FileInfo) (uint32, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}

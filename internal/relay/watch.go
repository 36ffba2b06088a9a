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

// ErrParentGone is the cause of the relay's context when it stops because
// the job's shell is gone.
var ErrParentGone = errors.New("parent process is gone")

// watch returns the reason to stop when the parent process is gone,
// checking every cfg.WatchInterval, or ctx's cause when ctx ends first.
// When the socket directory no longer names the directory dir, opened at
// start (removed, renamed away, or recreated under the same path as after
// a requeue), it calls dirGone once and goes on: the relay keeps its ports
// until the job ends, so that no other user can take its address and
// receive the connections the job makes to the names it maps there.
// Holding dir open keeps its inode from being reused by a new directory.
func watch(ctx context.Context, cfg Config, dir *os.File, dirGone func()) error {
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
	gone := false
	for {
		if parent != nil && parent.gone() {
			return fmt.Errorf("%w: pid %d", ErrParentGone, cfg.ParentPID)
		}
		if !gone && !sameDir(cfg.Dir, dir) {
			gone = true
			dirGone()
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

package site

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"syscall"
)

// ErrNotRegular reports a read of a path that is not a regular file: a
// symbolic link, a named pipe, a device, a socket or a directory. A job can
// put any of these where sluice expects its output; none is ever opened for
// reading, so none can block a read or show what a link points to.
var ErrNotRegular = errors.New("not a regular file")

// notRegular is the error for a read of a file of mode m.
func notRegular(m fs.FileMode) error {
	return fmt.Errorf("%w (%s)", ErrNotRegular, fileKind(m))
}

// fileKind names the type of a file for an error message.
func fileKind(m fs.FileMode) string {
	switch t := m.Type(); {
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	case t&fs.ModeDir != 0:
		return "a directory"
	case t == 0:
		return "a regular file"
	default:
		return "a special file"
	}
}

// CheckRegular returns nil for a regular file, and for anything else an
// error wrapping ErrNotRegular that names what it is. fi should come from
// Stat, which does not follow links.
func CheckRegular(fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return notRegular(fi.Mode())
	}
	return nil
}

// ddArgs is the command that reads up to n bytes of the file p from offset
// off on the site and writes them to its standard output (GNU dd):
//
//   - nofollow: a symbolic link is refused by open itself (ELOOP), so a
//     link put in place after the caller's lstat is never followed;
//   - nonblock: open never waits for a writer of a named pipe, and a read
//     of one returns at once (EOF or EAGAIN) instead of waiting for data;
//   - skip_bytes, count_bytes: skip and count are bytes, not blocks, so the
//     output is never more than n bytes whatever the file does meanwhile.
//
// LC_ALL=C keeps its error messages in English, for ddError.
func ddArgs(p string, off int64, n int) []string {
	bs := min(n, 1<<20)
	return []string{"env", "LC_ALL=C", "dd", "if=" + p,
		"iflag=nofollow,nonblock,skip_bytes,count_bytes",
		"skip=" + strconv.FormatInt(off, 10), "count=" + strconv.Itoa(n),
		"bs=" + strconv.Itoa(bs), "status=none"}
}

// ddError turns how a dd of ddArgs failed into an error that says why in
// the runners' terms: a missing file is fs.ErrNotExist, a file that turned
// into a link or a pipe meanwhile is ErrNotRegular.
func ddError(err error) error {
	var exit *ExitError
	if !errors.As(err, &exit) {
		return err
	}
	msg := exit.Stderr
	switch {
	case exit.Code == 127:
		return fmt.Errorf("the site has no dd to read files with: %w", err)
	case strings.Contains(msg, "No such file or directory"):
		return fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	case strings.Contains(msg, "Too many levels of symbolic links"):
		return fmt.Errorf("%w: %w", notRegular(fs.ModeSymlink), err)
	case strings.Contains(msg, "Resource temporarily unavailable"), strings.Contains(msg, "Is a directory"):
		return fmt.Errorf("%w: %w", ErrNotRegular, err)
	case strings.Contains(msg, "Permission denied"):
		return fmt.Errorf("%w: %w", fs.ErrPermission, err)
	}
	return err
}

// openError names what an open with O_NOFOLLOW refused: ELOOP is a
// symbolic link (Linux and the BSDs say so; Linux also gives ELOOP for a
// link in a parent that loops, which is refused all the same).
func openError(err error) error {
	if errors.Is(err, syscall.ELOOP) {
		return fmt.Errorf("%w: %w", notRegular(fs.ModeSymlink), err)
	}
	return err
}

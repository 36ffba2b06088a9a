package relay

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The forward entry's protocol. A tunnel (sluice-tunnel, the gateway)
// opens a direct-streamlocal@openssh.com channel to <dir>/fwd.sock and
// writes a header of forwardHeaderLen bytes:
//
//	offset 0  4 bytes  magic "SLFW"
//	offset 4  1 byte   version, 1
//	offset 5  1 byte   flags, 0 (reserved: a header with any set is refused)
//	offset 6  2 bytes  the pod's port (the declared containerPort), big-endian, 1..65535
//
// The relay answers with one line of at most maxReplyLen bytes, newline
// included: "ok\n", after which the channel carries the job's connection,
// or "refused: <reason>\n", after which it closes the channel. The reason
// is for the tunnel's log and the pod's Events: it names the port and why
// (nothing listens, a listener another user owns, a bad port file). A
// reason that starts with reportPrefix is one the pod's author is to be
// told of (RefusedError.Report): the port is another user's, or the job's
// port file is bad; the others (nothing listens yet, a slow accept) are
// usual while a job starts.
const (
	forwardMagic     = "SLFW"
	forwardVersion   = 1
	forwardHeaderLen = 8
	maxReplyLen      = 512
	replyOK          = "ok"
	replyRefused     = "refused: "
	reportPrefix     = "report: "
)

// ForwardSocket is the name of the relay's forward entry in the pod's
// socket directory.
const ForwardSocket = "fwd.sock"

// ForwardHeader returns the header asking the relay's forward entry for a
// connection to the job's listener of port, the pod's declared port.
func ForwardHeader(port uint16) []byte {
	b := make([]byte, forwardHeaderLen)
	copy(b, forwardMagic)
	b[4] = forwardVersion
	b[5] = 0
	binary.BigEndian.PutUint16(b[6:], port)
	return b
}

// ParseForwardHeader reads the port from a forward header. It refuses
// anything but a version 1 header without flags and with a port.
func ParseForwardHeader(b []byte) (uint16, error) {
	switch {
	case len(b) != forwardHeaderLen:
		return 0, fmt.Errorf("forward header: %d bytes, want %d", len(b), forwardHeaderLen)
	case string(b[:4]) != forwardMagic:
		return 0, fmt.Errorf("forward header: magic %q, want %q", b[:4], forwardMagic)
	case b[4] != forwardVersion:
		return 0, fmt.Errorf("forward header: version %d, this relay speaks %d", b[4], forwardVersion)
	case b[5] != 0:
		return 0, fmt.Errorf("forward header: unknown flags %#02x", b[5])
	}
	port := binary.BigEndian.Uint16(b[6:])
	if port == 0 {
		return 0, errors.New("forward header: port 0")
	}
	return port, nil
}

// RefusedError is a refusal the relay's forward entry answered with.
type RefusedError struct {
	// Reason is the relay's reason, as it wrote it.
	Reason string
	// Report: the pod's author is to be told (a Warning Event): another
	// user holds the job's port, or the job's port file is bad.
	Report bool
}

func (e *RefusedError) Error() string { return "relay refused the forward: " + e.Reason }

// OpenForward asks the relay's forward entry, reached as rw (a
// direct-streamlocal channel to <dir>/fwd.sock), for a connection to the
// job's listener of port. On nil, rw carries that connection. A refusal is
// a *RefusedError; any other error is the entry's failure (no relay, a
// malformed answer). It reads the answer a byte at a time, so that none of
// the job's bytes after it are taken from rw.
func OpenForward(rw io.ReadWriter, port uint16) error {
	if _, err := rw.Write(ForwardHeader(port)); err != nil {
		return fmt.Errorf("forward entry: write header: %w", err)
	}
	return readForwardReply(rw)
}

// OpenForwardContext is OpenForward that gives up when ctx ends first,
// closing c; a failure closes c too.
func OpenForwardContext(ctx context.Context, c io.ReadWriteCloser, port uint16) error {
	stop := context.AfterFunc(ctx, func() { c.Close() })
	err := OpenForward(c, port)
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		c.Close()
		return err
	}
	return nil
}

func readForwardReply(r io.Reader) error {
	var line []byte
	var b [1]byte
	for {
		n, err := r.Read(b[:])
		if n == 1 {
			if b[0] == '\n' {
				break
			}
			line = append(line, b[0])
			if len(line) >= maxReplyLen {
				return fmt.Errorf("forward entry: answer longer than %d bytes", maxReplyLen)
			}
			continue
		}
		if err == io.EOF {
			return fmt.Errorf("forward entry: closed after %d bytes of its answer", len(line))
		}
		if err != nil {
			return fmt.Errorf("forward entry: read answer: %w", err)
		}
	}
	s := string(line)
	switch {
	case s == replyOK:
		return nil
	case strings.HasPrefix(s, replyRefused):
		reason, report := strings.CutPrefix(strings.ToValidUTF8(s[len(replyRefused):], "?"), reportPrefix)
		return &RefusedError{Reason: reason, Report: report}
	}
	return fmt.Errorf("forward entry: unexpected answer %q", s)
}

// refusalLine is the answer line refusing a forward for reason, to be
// reported to the pod's author when report is true, made to fit in
// maxReplyLen and to stay one line whatever the reason holds.
func refusalLine(reason string, report bool) []byte {
	reason = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, reason)
	line := replyRefused + reason
	if report {
		line = replyRefused + reportPrefix + reason
	}
	if len(line) > maxReplyLen-1 {
		line = strings.ToValidUTF8(line[:maxReplyLen-1], "")
	}
	return []byte(line + "\n")
}

package site

import (
	"bytes"
	"errors"
	"strings"
)

const (
	// defaultMaxStdout is the standard output Run keeps unless told otherwise.
	defaultMaxStdout = 64 << 20
	// maxStderr is the standard error Run keeps; the rest is cut off.
	maxStderr = 64 << 10
)

// errStdoutLimit is the cause given to a command's context when its output
// went over the limit.
var errStdoutLimit = errors.New("stdout limit")

// capture keeps the first limit bytes written to it and discards the rest,
// so that the writer is never blocked. One goroutine writes to it.
type capture struct {
	buf    bytes.Buffer
	limit  int
	over   bool
	onOver func() // If nil, going over the limit only truncates.
}

func (c *capture) Write(p []byte) (int, error) {
	room := c.limit - c.buf.Len()
	if len(p) <= room {
		return c.buf.Write(p)
	}
	c.buf.Write(p[:max(room, 0)])
	if !c.over {
		c.over = true
		if c.onOver != nil {
			c.onOver()
		}
	}
	return len(p), nil
}

// stderrText is the captured standard error for an error message.
func (c *capture) stderrText() string {
	s := strings.TrimSpace(c.buf.String())
	if c.over {
		s += " [stderr truncated]"
	}
	return s
}

package slurm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"unicode"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/sitepath"
)

// maxFailureMessage bounds the message FailureMessage returns.
const maxFailureMessage = 1024

// failureWindow is how much of the end of job.out FailureMessage reads. The
// script's message is among its last words, and the job can make job.out
// as large as it likes: reading it whole would take the virtual kubelet's
// memory.
const failureWindow = 64 << 10

// FailureMessage returns why the job's batch script failed on its own, as
// it said on its standard error: the last "sluice: " line of job.out (the
// reverse tunnel not up, a relay port taken, no SocketDirRoot, ...), or ""
// when there is none. Only the last failureWindow bytes are read; a
// job.out that is not a regular file (a named pipe, a link) is refused.
func (c *Client) FailureMessage(ctx context.Context, ref JobRef) (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	if !sitepath.Chars.MatchString(ref.Dir) {
		return "", fmt.Errorf("failure message: job directory %q is not a safe path", ref.Dir)
	}
	data, err := c.readTail(ctx, path.Join(ref.Dir, jobscript.JobOutFile), failureWindow)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s of job %s: %w", jobscript.JobOutFile, ref.JobID, err)
	}
	return lastSluiceLine(data), nil
}

// readTail reads the last n bytes of file, from the start of a line: when
// the file is longer, the line cut by the window is left out.
func (c *Client) readTail(ctx context.Context, file string, n int) ([]byte, error) {
	fi, err := c.Site.Stat(ctx, file)
	if err != nil {
		return nil, err
	}
	off := fi.Size() - int64(n)
	if off <= 0 {
		return c.Site.ReadAt(ctx, file, 0, n)
	}
	// One byte more, before the window, tells whether the window starts a
	// line.
	data, err := c.Site.ReadAt(ctx, file, off-1, n+1)
	if err != nil {
		return nil, err
	}
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return data[i+1:], nil
	}
	return nil, nil
}

// lastSluiceLine is the text of the last line of out that starts with
// "sluice: ", without control characters and at most maxFailureMessage
// bytes long.
func lastSluiceLine(out []byte) string {
	var last string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if msg, ok := strings.CutPrefix(sc.Text(), "sluice: "); ok {
			last = msg
		}
	}
	last = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, strings.TrimSpace(last))
	if len(last) > maxFailureMessage {
		last = strings.ToValidUTF8(last[:maxFailureMessage], "") + "…"
	}
	return last
}

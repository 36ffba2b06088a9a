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
)

// maxFailureMessage bounds the message FailureMessage returns.
const maxFailureMessage = 1024

// FailureMessage returns why the job's batch script failed on its own, as
// it said on its standard error: the last "sluice: " line of job.out (the
// reverse tunnel not up, a relay port taken, no SocketDirRoot, ...), or ""
// when there is none.
func (c *Client) FailureMessage(ctx context.Context, ref JobRef) (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	if !safePath.MatchString(ref.Dir) {
		return "", fmt.Errorf("failure message: job directory %q is not a safe path", ref.Dir)
	}
	data, err := c.Site.ReadFile(ctx, path.Join(ref.Dir, jobOut))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s of job %s: %w", jobOut, ref.JobID, err)
	}
	return lastSluiceLine(data), nil
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

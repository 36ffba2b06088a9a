package tunnel

import (
	"context"
	"errors"
	"net"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	jobrelay "github.com/sluice-hpc/sluice/internal/relay"
)

// entryError is a failure at the job's relay, not of the SSH connection:
// the relay refused the port, or the socket directory is not known yet. The
// connection is not made again for it.
type entryError struct{ err error }

func (e *entryError) Error() string { return "forward entry: " + e.err.Error() }
func (e *entryError) Unwrap() error { return e.err }

// readEntryDir reads the pod's socket directory, where its relay serves the
// forward entry, from file: empty until the job is submitted.
func readEntryDir(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", &entryError{err}
	}
	dir := strings.TrimSpace(string(b))
	if dir == "" {
		return "", &entryError{errors.New("the pod's socket directory is not known yet")}
	}
	if err := checkSocketDir(dir, nil); err != nil {
		return "", &entryError{err}
	}
	return dir, nil
}

// watchEntryDir reads file every period until ctx ends and records in
// status the socket directory new connections go to ("" while file names
// none): the virtual kubelet waits for a successor's before it ends the job
// handed over from.
func watchEntryDir(ctx context.Context, file string, every time.Duration, status *Status) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		dir, _ := readEntryDir(file) // the error says "none": dir is ""
		status.setEntryDir(dir)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// openEntry opens the relay's forward entry in dir on the node over c (a
// direct-streamlocal channel) and asks it for port. The relay joins the
// channel to a listener of the job's user, or says why not (a
// *jobrelay.RefusedError, within an *entryError).
func openEntry(ctx context.Context, c *ssh.Client, dir string, port int) (net.Conn, error) {
	conn, err := c.DialContext(ctx, "unix", path.Join(dir, jobrelay.ForwardSocket))
	if err != nil {
		return nil, err
	}
	if err := jobrelay.OpenForwardContext(ctx, conn, uint16(port)); err != nil {
		return nil, &entryError{err}
	}
	return conn, nil
}

package slurm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"path"
	"time"

	"github.com/sluice-hpc/sluice/internal/site"
)

// The relay binary lives on the site's shared filesystem, once per version:
// <DataRoot>/.bin/sluice-relay-<first 16 hex digits of its SHA-256>.
const (
	binDir      = ".bin"
	relayPrefix = "sluice-relay-"
	binDirMode  = fs.FileMode(0o700)
	relayMode   = fs.FileMode(0o500)
)

// relayPlacement is one placement of a relay binary, shared by the callers
// that ask for it meanwhile.
type relayPlacement struct {
	done chan struct{}
	path string
	err  error
}

// PlaceRelay puts binary, the sluice-relay program for the site's nodes, on
// the site and returns its path there:
// <DataRoot>/.bin/sluice-relay-<first 16 hex digits of its SHA-256>, mode
// 0500 in a 0700 directory. It checks the file's checksum on the site with
// sha256sum, writing it (to a temporary file renamed into place) only when
// it is missing or differs, and checks the placed file again. A site
// without sha256sum gives an error saying so.
//
// The result is kept: later calls for the same binary return at once,
// without a remote call. Concurrent calls for one binary place it once.
func (c *Client) PlaceRelay(ctx context.Context, binary []byte) (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	if len(binary) == 0 {
		return "", errors.New("place relay: the binary is empty")
	}
	sum := sha256.Sum256(binary)
	for {
		c.relayMu.Lock()
		if c.relays == nil {
			c.relays = map[[sha256.Size]byte]*relayPlacement{}
		}
		p := c.relays[sum]
		if p == nil {
			p = &relayPlacement{done: make(chan struct{})}
			c.relays[sum] = p
			c.relayMu.Unlock()
			p.path, p.err = c.placeRelay(ctx, binary, sum)
			if p.err != nil {
				c.relayMu.Lock()
				delete(c.relays, sum) // the next call tries again
				c.relayMu.Unlock()
			}
			close(p.done)
			return p.path, p.err
		}
		c.relayMu.Unlock()
		select {
		case <-p.done:
			if p.err == nil {
				return p.path, nil
			}
			// The call that placed it failed, maybe for its own context:
			// try again, unless this one is done too.
			if err := ctx.Err(); err != nil {
				return "", fmt.Errorf("place relay: %w", err)
			}
		case <-ctx.Done():
			return "", fmt.Errorf("place relay: %w", ctx.Err())
		}
	}
}

func (c *Client) placeRelay(ctx context.Context, binary []byte, sum [sha256.Size]byte) (string, error) {
	want := hex.EncodeToString(sum[:])
	dir := path.Join(c.DataRoot, binDir)
	file := path.Join(dir, relayPrefix+want[:16])
	if err := c.Site.MkdirAll(ctx, dir, binDirMode); err != nil {
		return "", fmt.Errorf("place relay: %w", err)
	}
	if err := c.privateDir(ctx, dir); err != nil {
		return "", err
	}
	fi, err := c.Site.Stat(ctx, file)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		// A named pipe or a link in its place: never read (sha256sum would
		// wait on a pipe), replaced below.
		c.logger().Warn("slurm: replacing the relay on the site", "path", file, "mode", fi.Mode())
	case err == nil:
		got, err := c.siteSum(ctx, file)
		if err != nil {
			return "", err
		}
		if got == want && fi.Mode().Perm() == relayMode {
			c.logger().Info("slurm: relay already on the site", "path", file)
			return file, nil
		}
		c.logger().Warn("slurm: replacing the relay on the site", "path", file, "sha256", got, "mode", fi.Mode())
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("place relay: %w", err)
	}
	if err := c.Site.WriteFile(ctx, file, binary, relayMode); err != nil {
		return "", fmt.Errorf("place relay: %w", err)
	}
	got, err := c.siteSum(ctx, file)
	if err != nil {
		return "", err
	}
	if got != want {
		return "", fmt.Errorf("place relay: %s has SHA-256 %s on the site after writing; want %s", file, got, want)
	}
	c.logger().Info("slurm: relay placed on the site", "path", file)
	return file, nil
}

// privateDir makes sure dir is a directory that only its owner can write.
func (c *Client) privateDir(ctx context.Context, dir string) error {
	fi, err := c.Site.Stat(ctx, dir)
	if err != nil {
		return fmt.Errorf("place relay: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("place relay: %s is not a directory", dir)
	}
	if fi.Mode().Perm() == binDirMode {
		return nil
	}
	if _, err := c.Site.Run(ctx, nil, "chmod", "700", dir); err != nil {
		return fmt.Errorf("place relay: make %s private: %w", dir, err)
	}
	return nil
}

// sumTimeout bounds sha256sum of the relay on the site.
const sumTimeout = time.Minute

// siteSum is the SHA-256 of file as the site's sha256sum computes it.
func (c *Client) siteSum(ctx context.Context, file string) (string, error) {
	// The job can write the file too: bound the wait, should it make it
	// something that blocks a read.
	ctx, cancel := context.WithTimeout(ctx, sumTimeout)
	defer cancel()
	out, err := c.Site.Run(ctx, nil, "sha256sum", file)
	var ee *site.ExitError
	switch {
	case errors.As(err, &ee) && ee.Code == 127, errors.Is(err, exec.ErrNotFound):
		return "", fmt.Errorf("place relay: the site has no sha256sum to check the relay with: %w", err)
	case err != nil:
		return "", fmt.Errorf("place relay: sha256sum %s: %w", file, err)
	}
	fields := bytes.Fields(out)
	if len(fields) == 0 || len(fields[0]) != 2*sha256.Size {
		return "", fmt.Errorf("place relay: sha256sum %s: unexpected output %q", file, out)
	}
	return string(bytes.ToLower(fields[0])), nil
}

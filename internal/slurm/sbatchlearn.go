package slurm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sync"

	"github.com/sluice-hpc/sluice/internal/sbatch"
	"github.com/sluice-hpc/sluice/internal/site"
)

// sbatchDir, under DataRoot, keeps what each Slurm version's sbatch
// listed, one file per version (<version>.json), so that a restart does not
// ask again. A namespace name cannot start with '.', so no job directory
// takes the name.
const sbatchDir = ".sbatch"

// maxSbatchVersion bounds the output of `sbatch --version`.
const maxSbatchVersion = 256

// sbatchVersion matches the output of `sbatch --version`: "slurm 22.05.8",
// "slurm-wlm 24.11.5". The version names a file: it starts with a digit
// and holds no '/'.
var sbatchVersion = regexp.MustCompile(`^slurm(?:-wlm)? ([0-9]{1,4}\.[0-9]{1,4}(?:\.[0-9]{1,6})?[A-Za-z0-9.+~-]{0,32})\n?$`)

// sbatchCache holds the tables learned, by Slurm version.
type sbatchCache struct {
	mu     sync.Mutex
	tables map[string]*sbatch.Options
}

// sbatchListingFile is what sbatchDir keeps of one version: the outputs
// themselves, parsed again when read, so that the file passes the checks
// the site's answer did.
type sbatchListingFile struct {
	Version string `json:"version"`
	Help    string `json:"help"`
	Usage   string `json:"usage"`
}

// LearnSbatch learns the options of the site's sbatch: it asks `sbatch
// --version`, and unless this client or the file under DataRoot already
// holds that version's table, reads `sbatch --help` and `sbatch --usage`
// and keeps what they list, in memory and in the file. On any failure it
// returns nil, which is the built-in table, with the reason: flags are then
// checked as before, and the caller says so once.
func (c *Client) LearnSbatch(ctx context.Context) (*sbatch.Options, error) {
	out, err := site.RunBounded(ctx, c.Site, maxSbatchVersion, "sbatch", "--version")
	if err != nil {
		return nil, fmt.Errorf("learn sbatch options: sbatch --version: %w", err)
	}
	m := sbatchVersion.FindSubmatch(out)
	if m == nil {
		return nil, fmt.Errorf("learn sbatch options: sbatch --version: not a Slurm version: %q", firstLine(out, 64))
	}
	version := string(m[1])
	c.sbatch.mu.Lock()
	defer c.sbatch.mu.Unlock()
	if t := c.sbatch.tables[version]; t != nil {
		return t, nil
	}
	file := path.Join(c.DataRoot, sbatchDir, version+".json")
	t, err := c.readSbatchListing(ctx, file, version)
	if err != nil {
		c.logger().Warn("slurm: reading sbatch's options again", "file", file, "error", err)
	}
	if t == nil {
		if t, err = c.listSbatch(ctx, file, version); err != nil {
			return nil, fmt.Errorf("learn sbatch options of Slurm %s: %w", version, err)
		}
	}
	if c.sbatch.tables == nil {
		c.sbatch.tables = map[string]*sbatch.Options{}
	}
	c.sbatch.tables[version] = t
	return t, nil
}

// readSbatchListing reads the table of version kept in file: nil, nil when
// there is none.
func (c *Client) readSbatchListing(ctx context.Context, file, version string) (*sbatch.Options, error) {
	data, err := c.Site.ReadAt(ctx, file, 0, 2*sbatch.MaxListing+1024)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f sbatchListingFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	if f.Version != version {
		return nil, fmt.Errorf("holds version %q", f.Version)
	}
	return sbatch.FromListing(version, []byte(f.Help), []byte(f.Usage))
}

// listSbatch asks the site's sbatch for its help and usage and keeps them
// in file; a file that cannot be written is logged: the table still holds.
func (c *Client) listSbatch(ctx context.Context, file, version string) (*sbatch.Options, error) {
	help, err := site.RunBounded(ctx, c.Site, sbatch.MaxListing, "sbatch", "--help")
	if err != nil {
		return nil, fmt.Errorf("sbatch --help: %w", err)
	}
	usage, err := site.RunBounded(ctx, c.Site, sbatch.MaxListing, "sbatch", "--usage")
	if err != nil {
		return nil, fmt.Errorf("sbatch --usage: %w", err)
	}
	t, err := sbatch.FromListing(version, help, usage)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(sbatchListingFile{Version: version, Help: string(help), Usage: string(usage)})
	if err == nil {
		err = c.keepSbatchListing(ctx, file, data)
	}
	if err != nil {
		c.logger().Warn("slurm: sbatch's options not kept: a restart asks again", "file", file, "error", err)
	}
	return t, nil
}

func (c *Client) keepSbatchListing(ctx context.Context, file string, data []byte) error {
	if err := c.Site.MkdirAll(ctx, path.Dir(file), 0o700); err != nil {
		return err
	}
	return c.Site.WriteFile(ctx, file, data, 0o600)
}

// firstLine is the first line of out, cut to n bytes.
func firstLine(out []byte, n int) string {
	line, _, _ := bytes.Cut(out, []byte("\n"))
	if len(line) > n {
		line = line[:n]
	}
	return string(line)
}

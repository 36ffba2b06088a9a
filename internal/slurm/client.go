// Package slurm is the Slurm client of a site: it submits jobs (rendered by
// internal/jobscript), polls, cancels and reads the logs and usage of jobs,
// reads what the nodes offer, and learns the site's sbatch, running
// sbatch, squeue, sacct, scancel, sstat and sinfo through a site.Runner and
// parsing what they print.
package slurm

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/site"
)

// Client submits, polls, cancels and reads the logs of the jobs of one site.
// Site and DataRoot must be set; the other fields have defaults. A Client
// must not be copied after first use.
type Client struct {
	// Site runs the Slurm commands and holds the job directories.
	Site site.Runner
	// DataRoot is the directory on the site's shared filesystem that holds
	// the job directories: a clean absolute path of letters, digits and
	// ._/@+=- only (it reaches #SBATCH lines and find patterns).
	DataRoot string
	// Runtime runs the containers of every job.
	Runtime jobscript.Runtime
	// SiteOptions are interLink's plugin keys that shape every job's
	// script (NewSiteOptions). The zero value has none.
	SiteOptions jobscript.SiteOptions
	// Logger receives what the client notices but does not return, such as
	// malformed lines of Slurm output. If nil, slog.Default() is used.
	Logger *slog.Logger
	// Now tells the time. If nil, time.Now is used.
	Now func() time.Time
	// PollInterval is how often Cancel and a followed log look again (a
	// log that does not grow, up to 8 times less often). If zero, 500ms.
	PollInterval time.Duration

	// noAcct is set once sacct has said that accounting is disabled.
	noAcct atomic.Bool
	// lastMalformed holds, by command, the last malformed output logged.
	lastMalformed sync.Map
	// relays holds the relay binaries placed on the site, by SHA-256.
	relayMu sync.Mutex
	relays  map[[sha256.Size]byte]*relayPlacement
	// follows holds the feeds of the followed logs (logfeed.go).
	follows followers
	// logReads bound the reads of the logs' history (logreads.go).
	logReads logReadSlots
	// sbatch holds the sbatch options learned, by version (sbatchlearn.go).
	sbatch sbatchCache
}

// JobID is a Slurm job ID.
type JobID string

// JobRef names a submitted job: the pod UID it is named after, its Slurm ID
// (empty when not known: the job is then found by name) and its directory.
type JobRef struct {
	UID   string
	JobID JobID
	Dir   string
	// Grace, when not zero, is the time Cancel gives a running job's
	// batch script to run its containers' preStop hooks and stop them
	// (scancel --batch --signal=TERM) before it cancels the job.
	Grace time.Duration
}

// Ref is the reference of the job of a pod.
func (c *Client) Ref(namespace, uid string, id JobID) JobRef {
	return JobRef{UID: uid, JobID: id, Dir: jobscript.JobDir(c.DataRoot, namespace, uid)}
}

// Defaults.
const (
	defaultPollInterval = 500 * time.Millisecond
	// cancelRetry is how often Cancel issues scancel again.
	cancelRetry = 5 * time.Second
)

func (c *Client) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Client) poll() time.Duration {
	if c.PollInterval > 0 {
		return c.PollInterval
	}
	return defaultPollInterval
}

// check reports a Client that cannot work.
func (c *Client) check() error {
	if c.Site == nil {
		return errors.New("slurm: client has no site")
	}
	if err := jobscript.CheckJobDir(c.DataRoot); err != nil {
		return fmt.Errorf("slurm: data root: %w", err)
	}
	return nil
}

// checkRef reports a reference that is not one of this client's jobs: its UID
// is validated and its directory must be <DataRoot>/<namespace>-<uid>.
func (c *Client) checkRef(ref JobRef) error {
	if err := c.check(); err != nil {
		return err
	}
	if err := jobscript.CheckUID(ref.UID); err != nil {
		return err
	}
	if ref.JobID != "" {
		if _, err := ParseJobID(string(ref.JobID)); err != nil {
			return err
		}
	}
	dir, base := path.Split(ref.Dir)
	ns, ok := strings.CutSuffix(base, "-"+ref.UID)
	if path.Clean(ref.Dir) != ref.Dir || path.Clean(dir) != c.DataRoot || !ok {
		return fmt.Errorf("slurm: job directory %q is not <data root>/<namespace>-%s", ref.Dir, ref.UID)
	}
	return jobscript.CheckNamespace(ns)
}

// malformed logs the malformed lines of a command's output, unless they
// are those it logged last time: a job of the user with a newline in its
// name would otherwise fill the log at every poll.
func (c *Client) malformed(command string, err error) {
	if last, ok := c.lastMalformed.Swap(command, err.Error()); ok && last == err.Error() {
		return
	}
	c.logger().Warn("slurm: skipping malformed lines", "command", command, "error", err)
}

// exitCode is the code of a command that ran on the site and failed, or -1.
func exitCode(err error) (int, string) {
	var ee *site.ExitError
	if errors.As(err, &ee) {
		return ee.Code, ee.Stderr
	}
	return -1, ""
}

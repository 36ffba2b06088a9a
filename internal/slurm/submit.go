package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/salt"
	"github.com/sluice-hpc/sluice/internal/site"
)

// Modes of what Submit writes.
const (
	dirMode    fs.FileMode = 0o700
	scriptMode fs.FileMode = 0o700
	idMode     fs.FileMode = 0o600
	// fileMode is the mode of a job file that gives none.
	fileMode fs.FileMode = 0o600
)

// sbatchOutput matches sbatch --parsable: "<id>" or "<id>;<cluster>".
var sbatchOutput = regexp.MustCompile(`^([1-9][0-9]{0,9})(;[A-Za-z0-9_.-]{1,64})?$`)

// parseSbatch parses the output of sbatch --parsable.
func parseSbatch(out []byte) (JobID, error) {
	m := sbatchOutput.FindStringSubmatch(strings.TrimSpace(string(out)))
	if m == nil {
		return "", fmt.Errorf("sbatch: unexpected output %q", out)
	}
	return JobID(m[1]), nil
}

// Submit submits job as a batch job named after its pod UID, once: a job
// whose directory holds a job.id, or that Slurm knows by name, is adopted
// instead. Otherwise Submit writes the job directory (its files and job.sh),
// runs sbatch and records the job ID in job.id. For a job with a reverse
// tunnel it sets job.Reverse.Salt: a new one, written to the job directory
// before sbatch runs, or the one an adopted job was submitted with, read
// back from there. A job that cannot be submitted whatever the site does
// gives a *PodError (one whose script does not render), or a *RefusedError
// when sbatch refuses it for what it holds (its script, an option or a
// value): submitting it again cannot succeed.
func (c *Client) Submit(ctx context.Context, job *jobscript.Job) (JobID, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	if err := jobscript.CheckUID(job.UID); err != nil {
		return "", &jobscript.PodError{Field: "metadata.uid", Reason: err.Error()}
	}
	if err := jobscript.CheckNamespace(job.Namespace); err != nil {
		return "", &jobscript.PodError{Field: "metadata.namespace", Reason: err.Error()}
	}
	dir := jobscript.JobDir(c.DataRoot, job.Namespace, job.UID)
	id, err := c.existing(ctx, job.UID, dir)
	if err != nil {
		return "", err
	}
	if id != "" {
		if job.Reverse != nil {
			job.Reverse.Salt, err = c.readSalt(ctx, dir)
		}
		return id, err
	}
	if job.Reverse != nil {
		job.Reverse.Salt = salt.New()
	}
	script, err := c.writeJob(ctx, job, dir)
	if err != nil {
		return "", err
	}
	// sbatch reads the script on its standard input, not from job.sh: the
	// jobs of the account may write job.sh (they run as the same user), and
	// a named pipe there would hold sbatch, and the submission, for ever.
	out, err := c.Site.Run(ctx, bytes.NewReader(script), "sbatch", "--parsable")
	if rerr, ok := sbatchRefused(err); ok {
		return "", rerr
	}
	if err != nil {
		return "", fmt.Errorf("sbatch %s: %w", job.UID, err)
	}
	if id, err = parseSbatch(out); err != nil {
		return "", err
	}
	if err := c.writeID(ctx, dir, id); err != nil {
		return id, err
	}
	c.logger().Info("slurm: submitted", "uid", job.UID, "job", id)
	return id, nil
}

// existing finds the job of a pod that was submitted before: from job.id,
// else by its name in squeue, else (when the directory holds a job.sh, so
// that sbatch may have run) by its name in sacct. An adopted job's ID is
// written to job.id.
func (c *Client) existing(ctx context.Context, uid, dir string) (JobID, error) {
	id, err := c.readID(ctx, dir)
	if err != nil || id != "" {
		return id, err
	}
	entries, err := c.queue(ctx, "--name="+uid)
	if err != nil {
		return "", err
	}
	e, found := newestNamed(entries, uid)
	if !found {
		if e, found, err = c.acctNamed(ctx, uid, dir); err != nil {
			return "", err
		}
	}
	if !found {
		return "", nil
	}
	if id, err = ParseJobID(e.ID); err != nil {
		return "", err
	}
	if err := c.Site.MkdirAll(ctx, dir, dirMode); err != nil {
		return "", fmt.Errorf("adopt job %s: %w", id, err)
	}
	if err := c.writeID(ctx, dir, id); err != nil {
		return "", err
	}
	c.logger().Info("slurm: adopted", "uid", uid, "job", id, "state", e.State)
	return id, nil
}

// acctNamed looks a job up by name in sacct, if the job directory holds a
// job.sh. It answers in squeue's terms.
func (c *Client) acctNamed(ctx context.Context, uid, dir string) (queueEntry, bool, error) {
	if _, err := c.Site.Stat(ctx, path.Join(dir, jobscript.ScriptFile)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return queueEntry{}, false, nil
		}
		return queueEntry{}, false, fmt.Errorf("look up job %s: %w", uid, err)
	}
	entries, err := c.accounting(ctx, "--name="+uid, "-S", acctEpoch)
	if err != nil {
		return queueEntry{}, false, err
	}
	queued := make([]queueEntry, 0, len(entries))
	for _, e := range entries {
		queued = append(queued, queueEntry{ID: e.ID, State: e.State, Name: e.Name})
	}
	e, found := newestNamed(queued, uid)
	return e, found, nil
}

// maxIDFile is the most job.id may hold: a job ID (ten digits) and a
// newline, with room to spare. The job can write job.id; more than this is
// not sluice's, and is not read.
const maxIDFile = 64

// readID reads job.id; a missing one gives "". A malformed one (too long,
// not a regular file, not a job ID) is logged and ignored: the job is then
// looked up by name, and job.id written again.
func (c *Client) readID(ctx context.Context, dir string) (JobID, error) {
	data, err := c.Site.ReadAt(ctx, path.Join(dir, jobscript.JobIDFile), 0, maxIDFile+1)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case errors.Is(err, site.ErrNotRegular):
		c.logger().Warn("slurm: ignoring malformed job.id", "dir", dir, "error", err)
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read %s: %w", jobscript.JobIDFile, err)
	case len(data) > maxIDFile:
		c.logger().Warn("slurm: ignoring malformed job.id", "dir", dir, "error", fmt.Sprintf("more than %d bytes", maxIDFile))
		return "", nil
	}
	id, err := ParseJobID(strings.TrimSpace(string(data)))
	if err != nil {
		c.logger().Warn("slurm: ignoring malformed job.id", "dir", dir, "error", err)
		return "", nil
	}
	return id, nil
}

// readSalt reads the salt an adopted job was submitted with (SaltFile). A
// job submitted before salts has none: "" names its socket directory by
// its pod UID, as its script does. One that is not a salt (the job, which
// runs as the same user, could write it) is an error: the shadow would look
// for the tunnel's sockets in the wrong place.
func (c *Client) readSalt(ctx context.Context, dir string) (string, error) {
	data, err := c.Site.ReadAt(ctx, path.Join(dir, jobscript.SaltFile), 0, salt.Len+2)
	if errors.Is(err, fs.ErrNotExist) {
		c.logger().Warn("slurm: adopted job has no salt: its socket directory is named by its pod uid", "dir", dir)
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", jobscript.SaltFile, err)
	}
	s := strings.TrimSuffix(string(data), "\n")
	if err := salt.Check(s); err != nil {
		return "", fmt.Errorf("read %s in %s: %w", jobscript.SaltFile, dir, err)
	}
	return s, nil
}

func (c *Client) writeID(ctx context.Context, dir string, id JobID) error {
	if err := c.Site.WriteFile(ctx, path.Join(dir, jobscript.JobIDFile), []byte(string(id)+"\n"), idMode); err != nil {
		return fmt.Errorf("write %s of job %s: %w", jobscript.JobIDFile, id, err)
	}
	return nil
}

// writeJob writes the job directory: the job's files, then job.sh, a copy
// of the script it returns for the record (sbatch is given the script
// itself).
func (c *Client) writeJob(ctx context.Context, job *jobscript.Job, dir string) ([]byte, error) {
	script, err := jobscript.Script(job, jobscript.ScriptOptions{JobDir: dir, Runtime: c.Runtime, Site: c.SiteOptions})
	if err != nil {
		// the same job renders the same way at every attempt
		return nil, &jobscript.PodError{Field: "spec", Reason: err.Error()}
	}
	if err := c.Site.MkdirAll(ctx, dir, dirMode); err != nil {
		return nil, fmt.Errorf("create job directory: %w", err)
	}
	if err := c.writeAnnotations(ctx, dir, job.Annotations); err != nil {
		return nil, err
	}
	if job.Reverse != nil {
		if err := c.Site.WriteFile(ctx, path.Join(dir, jobscript.SaltFile), []byte(job.Reverse.Salt+"\n"), fileMode); err != nil {
			return nil, fmt.Errorf("write %s: %w", jobscript.SaltFile, err)
		}
	}
	made := map[string]bool{dir: true}
	for _, f := range job.Files {
		name, err := jobFilePath(f.Path)
		if err != nil {
			return nil, err
		}
		full := path.Join(dir, name)
		if parent := path.Dir(full); !made[parent] {
			if err := c.Site.MkdirAll(ctx, parent, dirMode); err != nil {
				return nil, fmt.Errorf("create job directory: %w", err)
			}
			made[parent] = true
		}
		mode := f.Mode.Perm()
		if mode == 0 {
			mode = fileMode
		}
		if err := c.Site.WriteFile(ctx, full, f.Data, mode); err != nil {
			return nil, fmt.Errorf("write job file %s: %w", name, err)
		}
	}
	if err := c.Site.WriteFile(ctx, path.Join(dir, jobscript.ScriptFile), script, scriptMode); err != nil {
		return nil, fmt.Errorf("write %s: %w", jobscript.ScriptFile, err)
	}
	return script, nil
}

// reserved are the names in the job directory that Submit and the script
// write themselves.
var reserved = map[string]bool{jobscript.ScriptFile: true, jobscript.JobIDFile: true, jobscript.JobExitFile: true, jobscript.JobOutFile: true, jobscript.SaltFile: true, jobscript.AnnotationsFile: true}

// jobFilePath checks the path of a job file: relative, clean, inside the job
// directory, and none of the script's own files.
func jobFilePath(p string) (string, error) {
	if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == "." || p == ".." ||
		strings.HasPrefix(p, "../") || reserved[p] ||
		strings.HasSuffix(p, ".log") && !strings.Contains(p, "/") ||
		strings.HasSuffix(p, ".exit") && !strings.Contains(p, "/") {
		return "", fmt.Errorf("slurm: job file path %s is not allowed", strconv.Quote(p))
	}
	return p, nil
}

package slurm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Usage is what Slurm's accounting tells of a job's batch step: the step
// that runs the job script, and so every container of the pod (the script
// starts them itself, without srun; steps that exec or port-forward start
// are not counted).
type Usage struct {
	// CPU is the CPU time, user and system, that the step's processes
	// have used since it started.
	CPU time.Duration
	// Memory is the resident memory of the step's processes in bytes: now
	// for a running step (sstat), the most it held for one that ended
	// (sacct).
	Memory int64
	// Time is when the figures were read.
	Time time.Time
}

// errNoAcct: the site keeps no accounting for sacct to read.
var errNoAcct = errors.New("sacct: accounting unavailable")

// usageBatch bounds the job steps named in one sstat or sacct call, so that
// a node of thousands of pods keeps its command lines short (about 16
// bytes a step).
const usageBatch = 1000

// usageCmd is the command line of sstat or sacct printing, for each of
// steps, its ID and TRESUsageInTot ("cpu=00:01:02,…,mem=123456,…") in
// bytes (--noconvert), one record a line, '|' between the two: neither
// field holds anything a user of the site chose.
func usageCmd(command string, steps []string) []string {
	return []string{command, "-n", "-P", "--noconvert", "-j", strings.Join(steps, ","), "-o", "JobID,TRESUsageInTot"}
}

// Usage reads the usage of the batch steps of jobs: one sstat call for
// all of them (per usageBatch), then one sacct call for those sstat had
// nothing for (a step that just ended, or a node whose slurmd gathers no
// accounting). A job neither knows is left out. A step that sstat cannot
// find is not an error (it is left out); a command that fails is.
func (c *Client) Usage(ctx context.Context, jobs []JobID) (map[JobID]Usage, error) {
	got := make(map[JobID]Usage, len(jobs))
	for _, id := range jobs {
		if _, err := ParseJobID(string(id)); err != nil {
			return nil, fmt.Errorf("sstat: %w", err)
		}
	}
	if err := c.readUsage(ctx, "sstat", jobs, got); err != nil {
		return nil, err
	}
	var missing []JobID
	for _, id := range jobs {
		if _, ok := got[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 || c.noAcct.Load() {
		return got, nil
	}
	if err := c.readUsage(ctx, "sacct", missing, got); err != nil {
		if errors.Is(err, errNoAcct) {
			return got, nil // sstat's figures stand
		}
		return nil, err
	}
	return got, nil
}

// readUsage runs command (sstat or sacct) for the batch steps of jobs, in
// batches, and adds what it reports of them to got.
func (c *Client) readUsage(ctx context.Context, command string, jobs []JobID, got map[JobID]Usage) error {
	for start := 0; start < len(jobs); start += usageBatch {
		batch := jobs[start:min(start+usageBatch, len(jobs))]
		steps := make([]string, len(batch))
		for i, id := range batch {
			steps[i] = string(id) + ".batch"
		}
		out, err := c.Site.Run(ctx, nil, usageCmd(command, steps)...)
		if err != nil {
			if command == "sacct" && c.acctUnavailable(err) {
				return errNoAcct
			}
			return fmt.Errorf("%s: %w", command, err)
		}
		read, err := parseUsage(out, c.now())
		if err != nil {
			c.malformed(command, err)
		}
		for _, id := range batch {
			if u, ok := read[id]; ok {
				got[id] = u
			}
		}
	}
	return nil
}

// parseUsage parses sstat or sacct output (usageCmd) read at t: the
// records of batch steps whose TRESUsageInTot gives CPU time and memory,
// by job. Other steps and the job lines of sacct are skipped; records
// with empty usage (a running step in sacct, or a site gathering none)
// are left out; malformed ones, and every record of a step listed twice,
// are left out and reported together in err.
func parseUsage(out []byte, t time.Time) (map[JobID]Usage, error) {
	got := make(map[JobID]Usage)
	seen := make(map[JobID]int)
	var errs []error
	for line := range strings.Lines(string(out)) {
		line = strings.TrimSuffix(line, "\n")
		step, tres, ok := strings.Cut(line, "|")
		if !ok || strings.Contains(tres, "|") {
			errs = append(errs, fmt.Errorf("malformed record %q", line))
			continue
		}
		job, name, hasStep := strings.Cut(step, ".")
		if _, err := ParseJobID(job); err != nil {
			errs = append(errs, fmt.Errorf("malformed step %q", step))
			continue
		}
		if !hasStep || name != "batch" {
			continue
		}
		id := JobID(job)
		if seen[id]++; seen[id] > 1 {
			continue
		}
		u, found, err := parseTRESUsage(tres)
		if err != nil {
			errs = append(errs, fmt.Errorf("step %s: %w", step, err))
			continue
		}
		if found {
			u.Time = t
			got[id] = u
		}
	}
	for id, n := range seen {
		if n > 1 {
			delete(got, id)
			errs = append(errs, fmt.Errorf("step %s.batch listed %d times", id, n))
		}
	}
	return got, errors.Join(errs...)
}

// parseTRESUsage reads the cpu and mem entries of a TRES usage list
// ("cpu=00:00:15,energy=0,fs/disk=11049,mem=3756032,pages=0,vmem=8298496").
// found is false when the list is empty or lacks either.
func parseTRESUsage(s string) (u Usage, found bool, err error) {
	if s == "" {
		return Usage{}, false, nil
	}
	var cpu, mem bool
	for entry := range strings.SplitSeq(s, ",") {
		name, value, ok := strings.Cut(entry, "=")
		if !ok || name == "" {
			return Usage{}, false, fmt.Errorf("malformed TRES entry %q", entry)
		}
		switch name {
		case "cpu":
			if cpu {
				return Usage{}, false, errors.New("cpu listed twice")
			}
			if u.CPU, err = parseCPUTime(value); err != nil {
				return Usage{}, false, err
			}
			cpu = true
		case "mem":
			if mem {
				return Usage{}, false, errors.New("mem listed twice")
			}
			if u.Memory, err = parseBytes(value); err != nil {
				return Usage{}, false, fmt.Errorf("mem: %w", err)
			}
			mem = true
		}
	}
	return u, cpu && mem, nil
}

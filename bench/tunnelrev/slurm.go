//go:build bench

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/bench/internal/rigbench"
)

// holderJobName names the job that holds an allocation on the compute node
// for the srun chain, in squeue.
const holderJobName = "sluice-bench-tunnelrev"

// holderJob submits, as the site user on the login node, a job that holds
// an allocation on the compute node for the srun chain, waits until it
// runs there, and writes its id to a job file for `sluice-tunnel
// --job-file`. cleanup cancels it; its time limit ends it anyway.
func (e *env) holderJob(ctx context.Context) (job, jobFile string, err error) {
	out, err := rigbench.Output(e.rig.AsUser(ctx, rigbench.LoginNetns, "sbatch", "--parsable",
		"--job-name="+holderJobName, "--nodelist="+e.rig.Node, "--time=30", "--chdir=/tmp",
		"--output=/dev/null", "--wrap=sleep 3600"))
	if err != nil {
		return "", "", fmt.Errorf("sbatch holder job: %w", err)
	}
	job, _, _ = strings.Cut(strings.TrimSpace(string(out)), ";")
	if job == "" {
		return "", "", fmt.Errorf("sbatch holder job: no job id in %q", out)
	}
	e.jobs = append(e.jobs, job)
	if err := e.waitRunning(ctx, job); err != nil {
		return "", "", err
	}
	jobFile = filepath.Join(e.work, "job")
	if err := os.WriteFile(jobFile, []byte(job+"\n"), 0o644); err != nil {
		return "", "", fmt.Errorf("job file: %w", err)
	}
	return job, jobFile, nil
}

// waitRunning waits until job runs on the compute node.
func (e *env) waitRunning(ctx context.Context, job string) error {
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		out, err := rigbench.Output(e.rig.AsUser(ctx, rigbench.LoginNetns, "squeue", "-h", "-j", job, "-o", "%T %N"))
		state := strings.TrimSpace(string(out))
		switch f := strings.Fields(state); {
		case err != nil:
			last = err.Error() // the controller busy: ask again
		case len(f) == 2 && f[0] == "RUNNING" && f[1] == e.rig.Node:
			return nil
		case len(f) > 0 && (f[0] == "PENDING" || f[0] == "CONFIGURING" || f[0] == "RUNNING"):
			last = state
		default:
			return fmt.Errorf("holder job %s: %q, neither pending nor running", job, state)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("holder job %s: not running on %s after 60s: %s", job, e.rig.Node, last)
}

// cancelJob cancels job as the site user, whatever became of the
// benchmark's context.
func (e *env) cancelJob(job string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := rigbench.Output(e.rig.AsUser(ctx, rigbench.LoginNetns, "scancel", job)); err != nil {
		return fmt.Errorf("scancel holder job %s: %w", job, err)
	}
	return nil
}

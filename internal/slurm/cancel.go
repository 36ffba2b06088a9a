package slurm

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Cancel cancels the job of ref and returns once Slurm confirms it: squeue
// shows the job in a final state or no longer knows it. scancel is issued
// again while the job lingers. A job that already ended, or that Slurm does
// not know, needs no cancelling. Without a JobID in ref, the job is found
// from job.id or by name. With a Grace, a running job's batch script alone
// is first sent SIGTERM, and the job is cancelled only if it has not ended
// when Grace has passed.
func (c *Client) Cancel(ctx context.Context, ref JobRef) error {
	if err := c.checkRef(ref); err != nil {
		return err
	}
	id, err := c.resolve(ctx, ref)
	if err != nil || id == "" {
		return err
	}
	tick := time.NewTicker(c.poll())
	defer tick.Stop()
	var sent, graceEnd time.Time
	var lastErr error
	for {
		e, found, err := c.queueJob(ctx, id)
		switch {
		case err != nil:
			lastErr = err
		case !found || e.State.Final():
			return nil
		case e.Name != ref.UID:
			c.logger().Warn("slurm: not cancelling a job of another name", "uid", ref.UID, "job", id, "name", e.Name)
			return nil
		case ref.Grace > 0 && graceEnd.IsZero() && e.State == StateRunning:
			// Only the batch script is told: it runs the preStop hooks,
			// then stops the containers and ends.
			graceEnd = c.now().Add(ref.Grace)
			if _, err := c.Site.Run(ctx, nil, "scancel", "--batch", "--signal=TERM", string(id)); err != nil {
				lastErr = fmt.Errorf("scancel --batch: %w", err)
				graceEnd = c.now()
			}
		case c.now().Before(graceEnd):
		case sent.IsZero() || c.now().Sub(sent) >= cancelRetry:
			sent = c.now()
			if _, err := c.Site.Run(ctx, nil, "scancel", string(id)); err != nil {
				lastErr = fmt.Errorf("scancel: %w", err)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cancel job %s: %w", id, errors.Join(ctx.Err(), lastErr))
		case <-tick.C:
		}
	}
}

// Remove cancels the job of ref, as Cancel does, and once Slurm has
// confirmed it, removes the job directory.
func (c *Client) Remove(ctx context.Context, ref JobRef) error {
	if err := c.Cancel(ctx, ref); err != nil {
		return err
	}
	if err := c.Site.RemoveAll(ctx, ref.Dir); err != nil {
		return fmt.Errorf("remove job directory: %w", err)
	}
	return nil
}

// resolve finds the ID of the job of ref: given, from job.id, or by name.
// It is "" when there is no such job.
func (c *Client) resolve(ctx context.Context, ref JobRef) (JobID, error) {
	if ref.JobID != "" {
		return ref.JobID, nil
	}
	id, err := c.readID(ctx, ref.Dir)
	if err != nil || id != "" {
		return id, err
	}
	entries, err := c.queue(ctx, "--name="+ref.UID)
	if err != nil {
		return "", err
	}
	e, found := newestNamed(entries, ref.UID)
	if !found {
		return "", nil
	}
	return ParseJobID(e.ID)
}

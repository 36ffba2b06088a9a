package slurm

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
)

// Source says where a Status came from.
type Source string

// The sources of a Status, in the order Status asks them.
const (
	SourceSqueue Source = "squeue"
	SourceSacct  Source = "sacct"
	SourceFiles  Source = "files" // job.exit: Slurm no longer knows the job
	SourceNone   Source = ""      // the job was found nowhere
)

// Status is what is known of a job.
type Status struct {
	JobID JobID
	State State
	// Reason is Slurm's reason for the state ("Resources", "TimeLimit"), or
	// why a job in StateUnknown was not found.
	Reason string
	// BatchHost is the node that runs the batch script: a validated host
	// name or IP literal, or empty.
	BatchHost string
	// StartTime is when the job started; zero until it has.
	StartTime time.Time
	// EndTime is when the job ended; zero until it has.
	EndTime time.Time
	// LimitEnd is when a running job reaches its time limit, as squeue's
	// end time says (its start plus the limit, moved by an scontrol update
	// of the limit); zero for a job that is not running, has no limit, or
	// whose status came from elsewhere than squeue.
	LimitEnd time.Time
	// Exit is the batch script's exit code, when sacct or job.exit gave it.
	Exit *ExitCode
	// Containers holds the containers that have started, by name.
	Containers map[string]ContainerStatus
	Source     Source
}

// ContainerStatus is the result of one container, read from the job directory.
type ContainerStatus struct {
	Started  bool // it has a log or a time file
	Finished bool // it has an exit code
	ExitCode int
	// StartedAt and FinishedAt are the container's own times, as its job
	// wrote them on the node's clock (TimeFile); zero when not written
	// (a job of an older sluice, or a file that did not read).
	StartedAt, FinishedAt time.Time
	// Ready is what the container's readiness probe last said (ReadyFile);
	// nil for a container without one.
	Ready *bool
	// StartupPassed says whether the container's startup probe passed in
	// its current run (StartedFile); nil for a container without one.
	StartupPassed *bool
	// RestartCount is how often the container was killed by its liveness
	// or startup probe, or its postStart hook, and run again
	// (RestartsFile); LastTermination is how the last such run ended, nil
	// before the first. BackOff: it waits to run again.
	RestartCount    int
	LastTermination *Termination
	BackOff         bool
	// KilledBy is what killed a finished container that was not run
	// again (KilledFile), "" for one that ended by itself.
	KilledBy KillReason
}

// Status reports the state of jobs, keyed by pod UID. It asks squeue once
// for all of them; sacct once for those squeue no longer shows; and reads,
// in one more command, the exit files of the jobs that run or ran. A job
// found nowhere is StateUnknown with a reason; so is a malformed reference.
func (c *Client) Status(ctx context.Context, refs []JobRef) (map[string]Status, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	result := make(map[string]Status, len(refs))
	var valid []JobRef
	for _, ref := range refs {
		if err := c.checkRef(ref); err != nil {
			result[ref.UID] = Status{JobID: ref.JobID, State: StateUnknown, Reason: err.Error()}
			continue
		}
		valid = append(valid, ref)
	}
	if len(valid) == 0 {
		return result, nil
	}

	entries, err := c.queue(ctx)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]queueEntry, len(entries))
	for _, e := range entries {
		byID[e.ID] = e
	}
	var unqueued []JobRef
	for _, ref := range valid {
		e, ok := byID[string(ref.JobID)]
		if ref.JobID == "" {
			e, ok = newestNamed(entries, ref.UID)
		}
		if !ok || !c.sameJob(ref, e.Name) {
			unqueued = append(unqueued, ref)
			continue
		}
		result[ref.UID] = c.queueStatus(e)
	}

	lost := c.acctStatus(ctx, unqueued, result)
	for _, ref := range lost {
		result[ref.UID] = Status{JobID: ref.JobID, State: StateUnknown, Reason: lostReason(ref)}
	}

	var dirs []string
	for _, ref := range valid {
		if st := result[ref.UID]; st.State.ran() || st.State == StateUnknown {
			dirs = append(dirs, ref.Dir)
		}
	}
	files, err := c.scan(ctx, dirs)
	if err != nil {
		return nil, err
	}
	for _, ref := range valid {
		if d := files[ref.Dir]; d != nil {
			result[ref.UID] = withFiles(result[ref.UID], d)
		}
	}
	return result, nil
}

// sameJob reports whether the Slurm job named name is the job of ref; a
// job ID that Slurm reused after a reset names another pod's job.
func (c *Client) sameJob(ref JobRef, name string) bool {
	if name == ref.UID {
		return true
	}
	c.logger().Warn("slurm: job id names another job", "uid", ref.UID, "job", ref.JobID, "name", name)
	return false
}

// queueStatus is the Status of a job squeue shows.
func (c *Client) queueStatus(e queueEntry) Status {
	st := Status{JobID: JobID(e.ID), State: e.State, Reason: e.Reason, Source: SourceSqueue}
	st.BatchHost = c.batchHost(e.ID, e.Host)
	if e.State.ran() {
		st.StartTime = e.Start // before, it is the expected start
	}
	switch {
	case e.State.Final():
		st.EndTime = e.End // before, it is the expected end
	case e.State == StateRunning && e.End.After(e.Start):
		st.LimitEnd = e.End
	}
	return st
}

// acctStatus fills in result from one sacct call for the jobs in refs, and
// returns those sacct does not know (or all of them, without accounting).
func (c *Client) acctStatus(ctx context.Context, refs []JobRef, result map[string]Status) (lost []JobRef) {
	var ids []string
	for _, ref := range refs {
		if ref.JobID != "" {
			ids = append(ids, string(ref.JobID))
		}
	}
	if len(ids) == 0 {
		return refs
	}
	entries, err := c.accounting(ctx, "-j", strings.Join(ids, ","))
	if err != nil {
		c.logger().Warn("slurm: sacct failed; using exit files", "error", err)
		return refs
	}
	byID := make(map[string]acctEntry, len(entries))
	for _, e := range entries {
		byID[e.ID] = e
	}
	for _, ref := range refs {
		e, ok := byID[string(ref.JobID)]
		if !ok || !c.sameJob(ref, e.Name) {
			lost = append(lost, ref)
			continue
		}
		exit := e.Exit
		st := Status{JobID: ref.JobID, State: e.State, Reason: e.Reason, Source: SourceSacct, Exit: &exit}
		st.BatchHost = c.batchHost(e.ID, e.Host)
		if e.State.ran() {
			st.StartTime = e.Start
		}
		if e.State.Final() {
			st.EndTime = e.End
		} else {
			st.Exit = nil // not yet
		}
		result[ref.UID] = st
	}
	return lost
}

// batchHost validates the batch host Slurm reported for a job: anything
// but a host name or an IP literal is logged and dropped.
func (c *Client) batchHost(id, host string) string {
	h, err := parseBatchHost(host)
	if err != nil {
		c.logger().Warn("slurm: dropping batch host", "job", id, "error", err)
	}
	return h
}

func lostReason(ref JobRef) string {
	if ref.JobID == "" {
		return fmt.Sprintf("no job named %s is known to squeue and it wrote no %s", ref.UID, jobscript.JobExitFile)
	}
	return fmt.Sprintf("job %s is known to neither squeue nor sacct and wrote no %s", ref.JobID, jobscript.JobExitFile)
}

// withFiles adds what the job directory says to st. A job Slurm no longer
// knows but that wrote job.exit ended with that code.
func withFiles(st Status, d *dirFiles) Status {
	st.Containers = d.containers()
	code, ok := d.exits[jobName]
	if !ok {
		return st
	}
	if st.Exit == nil {
		st.Exit = &ExitCode{Code: code}
	}
	if st.State == StateUnknown {
		st.State, st.Reason, st.Source = StateCompleted, "", SourceFiles
		if code != 0 {
			st.State = StateFailed
		}
	}
	return st
}

package doctor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/site"
	"github.com/sluice-hpc/sluice/internal/sitepath"
	"github.com/sluice-hpc/sluice/internal/slurm"
	"golang.org/x/crypto/ssh"
)

// prober runs the probe job and the checks that need it.
type prober struct {
	d      *Doctor
	r      *Report
	runner site.Runner
	log    *slog.Logger
	access *access // nil with local access
	login  *ssh.Client
}

// skip adds the probe's checks from the first not yet added as skipped.
func (p *prober) skip(why string) {
	for _, name := range probeChecks {
		if _, done := p.r.Find(name); !done {
			p.r.add(Check{Name: name, Status: Skip, Found: why})
		}
	}
}

func (p *prober) run(ctx context.Context, dataRootOK bool) {
	c := p.d.Config
	root, note := c.Site.DataRoot, ""
	if !dataRootOK {
		dir, err := p.scratchRoot(ctx)
		if err != nil {
			p.r.add(Check{Name: "probe-job", Status: Fail, Found: "Site.DataRoot is not writable and no scratch directory could be made in the site account's home: " + err.Error(),
				Fix: "fix Site.DataRoot (see data-root) and run the doctor again"})
			p.skip("not checked: no probe job")
			return
		}
		defer p.cleanup(ctx, func(ctx context.Context) error { return p.runner.RemoveAll(ctx, dir) })
		root, note = dir, " (from "+dir+": Site.DataRoot is not writable)"
	}
	opts, err := jobscript.NewSiteOptions(c.Site)
	if err != nil {
		p.r.add(Check{Name: "probe-job", Status: Fail, Found: err.Error(), Fix: "fix the site keys it names"})
		p.skip("not checked: no probe job")
		return
	}
	runtime := jobscript.Runtime(c.Site.ContainerRuntime)
	program := opts.RuntimePath
	if program == "" {
		program = runtime.Binary()
	}
	opts.RuntimePath, opts.RuntimeOptions = "", nil // the probe itself runs with runtime none
	client := &slurm.Client{Site: p.runner, DataRoot: root, Runtime: jobscript.RuntimeNone, SiteOptions: opts, Logger: p.log, PollInterval: pollEvery}

	uid := "doctor-" + randomSuffix()
	ref := client.Ref(probeNamespace, uid, "")
	job := probeJob(uid, c.Site.SocketDirRoot, program, path.Join(ref.Dir, probeDone))
	if f, ok := opts.Flavors[opts.DefaultFlavor]; ok {
		// The site's default flavor, as a pod without one gets: its
		// partition or account may be what lets a job in.
		job.Flavor, job.FlavorFlags = f.Name, slices.Clone(f.Flags)
	}
	submitted := time.Now()
	id, err := client.Submit(ctx, job)
	if err != nil {
		p.r.add(Check{Name: "probe-job", Status: Fail, Found: "submitting the probe job" + note + ": " + err.Error(),
			Fix: "the jobs of sluice are submitted the same way: fix what sbatch says (partition, account, Site.Flavors)"})
		p.skip("not checked: no probe job")
		_ = client.Site.RemoveAll(ctx, ref.Dir)
		return
	}
	ref.JobID = id
	defer p.cleanup(ctx, func(ctx context.Context) error {
		// The probe ends on the done file, removing its socket directory;
		// Remove cancels it if it did not.
		if p.runner.WriteFile(ctx, path.Join(ref.Dir, probeDone), nil, 0o600) == nil {
			p.waitEnded(ctx, client, ref)
		}
		return client.Remove(ctx, ref)
	})

	st, waited, err := p.waitRunning(ctx, client, ref, submitted)
	if err != nil {
		p.r.add(Check{Name: "probe-job", Status: Warn, Found: fmt.Sprintf("job %s%s: %v", id, note, err),
			Fix: "run the doctor when the queue is shorter, or give it more time (--queue-wait)"})
		p.skip("not checked: the probe job did not run")
		return
	}
	if st.State != slurm.StateRunning || st.BatchHost == "" {
		msg, _ := client.FailureMessage(ctx, ref)
		p.r.add(Check{Name: "probe-job", Status: Fail, Found: fmt.Sprintf("job %s%s ended %s before the doctor saw it run: %s", id, note, st.State, msg),
			Fix: "the jobs of sluice run the same way: fix what the job's output says (in " + ref.Dir + " until the doctor removes it)"})
		p.skip("not checked: the probe job did not run")
		return
	}
	host := st.BatchHost
	res, err := p.waitReady(ctx, client, ref)
	if err != nil {
		p.r.add(Check{Name: "probe-job", Status: Fail, Found: fmt.Sprintf("job %s ran on %s but its probe did not report: %v", id, host, err),
			Fix: "look at the job's output; Site.CommandPrefix and Site.BashPath shape every job"})
		p.skip("not checked: the probe did not report")
		return
	}
	p.r.add(Check{Name: "probe-job", Status: OK,
		Found: fmt.Sprintf("job %s ran on %s after waiting %s in the queue%s", id, host, waited.Round(100*time.Millisecond), note)})
	p.r.add(decideRuntime(c.Site.ContainerRuntime, program, host, res.facts["runtime"]))
	reverse := c.Network.SSH.Reverse.Enabled
	sockCheck, sockDir := decideSocketDir(c.Site.SocketDirRoot, host, res.facts["sockroot"], reverse)
	p.r.add(sockCheck)
	p.r.add(decidePortStart(res.facts["portstart"], host, reverse))
	if p.login == nil {
		p.skip("not checked: Site.Access local has no SSH connection to the login node")
		return
	}
	nodeChecks(ctx, p.r, c, p.access, p.login, host, sockDir, p.d.timeout())
}

// cleanup runs fn with its own bounded context, so that it also runs when
// ctx was cancelled (Ctrl-C).
func (p *prober) cleanup(ctx context.Context, fn func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := fn(ctx); err != nil {
		p.log.Warn("doctor: cleaning up the probe", "error", err)
	}
}

// waitRunning polls the job until it runs or ends, or QueueWait passes,
// and returns how long it waited in the queue as seen from here.
func (p *prober) waitRunning(ctx context.Context, client *slurm.Client, ref slurm.JobRef, submitted time.Time) (slurm.Status, time.Duration, error) {
	deadline := time.Now().Add(p.d.queueWait())
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var last slurm.Status
	for {
		sts, err := client.Status(ctx, []slurm.JobRef{ref})
		if err == nil {
			last = sts[ref.UID]
			// squeue may show a running job before its batch host.
			if (last.State == slurm.StateRunning && last.BatchHost != "") || last.State.Final() {
				return last, time.Since(submitted), nil
			}
		}
		if time.Now().After(deadline) {
			why := string(last.State)
			if last.Reason != "" {
				why += " (" + last.Reason + ")"
			}
			if err != nil {
				why = err.Error()
			}
			return last, 0, fmt.Errorf("still %s after %v", strings.ToLower(why), p.d.queueWait())
		}
		select {
		case <-ctx.Done():
			return last, 0, ctx.Err()
		case <-tick.C:
		}
	}
}

// probeEndWait bounds the wait for the probe to end once told to.
const probeEndWait = 10 * time.Second

// waitEnded polls the job until it ends, for at most probeEndWait.
func (p *prober) waitEnded(ctx context.Context, client *slurm.Client, ref slurm.JobRef) {
	ctx, cancel := context.WithTimeout(ctx, probeEndWait)
	defer cancel()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		sts, err := client.Status(ctx, []slurm.JobRef{ref})
		if err == nil && sts[ref.UID].State.Final() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// waitReady polls the probe's output until it says ready.
func (p *prober) waitReady(ctx context.Context, client *slurm.Client, ref slurm.JobRef) (probeResult, error) {
	ctx, cancel := context.WithTimeout(ctx, probeReadyWait)
	defer cancel()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var lastErr error
	for {
		res, err := readProbe(ctx, client, ref)
		if err == nil && res.ready {
			return res, nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return probeResult{}, errors.Join(ctx.Err(), lastErr)
		case <-tick.C:
		}
	}
}

// scratchRoot makes a directory in the site account's home for the probe,
// when DataRoot cannot hold it: so that the node checks still run. The
// home is on the filesystem the compute nodes share on most sites.
func (p *prober) scratchRoot(ctx context.Context) (string, error) {
	res := run(ctx, p.runner, "sh", "-c", `mktemp -d "${HOME:?}/.sluice-doctor.XXXXXX"`)
	if res.err != nil {
		return "", res.err
	}
	dir := strings.TrimSpace(string(res.out))
	if err := sitepath.Check(dir); err != nil {
		return "", fmt.Errorf("mktemp made %q: %w", clean(dir), err)
	}
	return dir, nil
}

//go:build rig

package slurm

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/site"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/testrig"
)

// The rig tests' environment: a Client over one SSH connection to the rig's
// login node as alice, counting the commands it runs.

// countingSite counts the commands run through it by program, and can hide
// jobs from squeue (to send Status to a real sacct).
type countingSite struct {
	site.Runner
	mu   sync.Mutex
	runs map[string]int
	hide map[string]bool
}

func (s *countingSite) Run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	prog := program(args)
	s.mu.Lock()
	s.runs[prog]++
	hide := s.hide
	s.mu.Unlock()
	out, err := s.Runner.Run(ctx, stdin, args...)
	if prog != "squeue" || err != nil || len(hide) == 0 {
		return out, err
	}
	end := separatorOf(args) + "\n"
	var kept []string
	for _, rec := range strings.SplitAfter(string(out), end) {
		if id, _, _ := strings.Cut(rec, "|"); !hide[id] {
			kept = append(kept, rec)
		}
	}
	return []byte(strings.Join(kept, "")), nil
}

func (s *countingSite) reset() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	runs := s.runs
	s.runs = map[string]int{}
	return runs
}

func (s *countingSite) hideJobs(ids ...JobID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hide = map[string]bool{}
	for _, id := range ids {
		s.hide[string(id)] = true
	}
}

type rigEnv struct {
	c    *Client
	site *countingSite
	rig  *testrig.Rig
	node string
}

// newRigEnv connects to the login node of the site on as alice, and checks that
// the site runs the Slurm it is named for.
func newRigEnv(t *testing.T, on rigSite, runtime jobscript.Runtime) *rigEnv {
	t.Helper()
	rig := on.rig
	signer, err := sshx.Signer(rig.Get(t, "RIG_KEY"))
	if err != nil {
		t.Fatal(err)
	}
	hostKeys, err := sshx.HostKeys(rig.Get(t, "RIG_KNOWN_HOSTS"))
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(&testLog{t: t})
	r, err := site.NewSSH(site.SSHConfig{
		Addr:            net.JoinHostPort(rig.Get(t, "RIG_LOGIN_ADDR"), rig.Get(t, "RIG_LOGIN_PORT")),
		User:            rig.Get(t, "RIG_USER"),
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: hostKeys,
		Logger:          logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := r.Run(ctx, nil, "sbatch", "--version")
	if err != nil {
		t.Fatalf("sbatch --version: %v", err)
	}
	if m := sbatchVersion.FindSubmatch(out); m == nil || !strings.HasPrefix(string(m[1]), on.slurm+".") {
		t.Fatalf("sbatch --version on the site of Slurm %s: %q", on.slurm, out)
	}
	cs := &countingSite{Runner: r, runs: map[string]int{}}
	return &rigEnv{
		c: &Client{Site: cs, DataRoot: rig.Get(t, "RIG_DATA_ROOT"), Runtime: runtime,
			Logger: logger, PollInterval: 200 * time.Millisecond},
		site: cs,
		rig:  rig,
		node: rig.Get(t, "RIG_NODE_NAME"),
	}
}

func newUID(t *testing.T) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// shJob is a job whose containers run sh -c scripts, by name.
func (e *rigEnv) shJob(t *testing.T, init, containers [][2]string) *jobscript.Job {
	t.Helper()
	job := &jobscript.Job{Namespace: "rig", Name: strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")), UID: newUID(t)}
	image := ""
	if e.c.Runtime != jobscript.RuntimeNone {
		image = e.rig.Get(t, "RIG_IMAGE")
	}
	for _, c := range init {
		job.Init = append(job.Init, jobscript.Container{Name: c[0], Image: image, Command: []string{"sh", "-c", c[1]}})
	}
	for _, c := range containers {
		job.Containers = append(job.Containers, jobscript.Container{Name: c[0], Image: image, Command: []string{"sh", "-c", c[1]}})
	}
	return job
}

// submit submits job and removes it when the test ends.
func (e *rigEnv) submit(t *testing.T, job *jobscript.Job) JobRef {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := e.c.Submit(ctx, job)
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	ref := e.c.Ref(job.Namespace, job.UID, id)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := e.c.Remove(ctx, ref); err != nil {
			t.Errorf("Remove: %v", err)
		}
	})
	return ref
}

// wait polls Status until done says so, or fails the test after a minute.
func (e *rigEnv) wait(t *testing.T, ref JobRef, what string, done func(Status) bool) Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last Status
	for {
		got, err := e.c.Status(ctx, []JobRef{ref})
		if err != nil {
			t.Fatalf("Status: %v", err)
		}
		if last = got[ref.UID]; done(last) {
			return last
		}
		select {
		case <-ctx.Done():
			t.Fatalf("job %s: not %s after a minute; last status %+v", ref.JobID, what, last)
		case <-tick.C:
		}
	}
}

func final(st Status) bool { return st.State.Final() }

func (e *rigEnv) logs(t *testing.T, ref JobRef, container string, opts LogOptions) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := e.c.Logs(ctx, ref, container, opts)
	if err != nil {
		t.Fatalf("Logs %s: %v", container, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("Logs %s: %v", container, err)
	}
	return string(b)
}

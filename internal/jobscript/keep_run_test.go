package jobscript

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests run, for real and without Slurm, the scripts of containers
// that their liveness or startup probes or their postStart hooks kill.

// check is an exec probe of command, checked every second, failing at
// the first failure.
func check(command ...string) *Probe {
	return &Probe{Kind: ProbeExec, Command: command, Period: 1, Timeout: 2, Success: 1, Failure: 1}
}

// fileText is the content of a file of the job directory without its
// newline, "" when it is not there.
func fileText(dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// restartsOf reads a container's restarts file (RestartsFile): its count,
// and the exit code, kill reason and times of its last killed run; count 0
// when it is not there. (The Slurm client
// reads the file as hostile; here the test's own script wrote it.)
func restartsOf(t *testing.T, dir, container string) (n int, last lastRun) {
	t.Helper()
	s := fileText(dir, RestartsFile(container))
	if s == "" {
		return 0, lastRun{}
	}
	var start, end int64
	if _, err := fmt.Sscanf(s, "%d %d %d %d %s", &n, &last.code, &start, &end, &last.reason); err != nil {
		t.Fatalf("%s = %q: %v", RestartsFile(container), s, err)
	}
	if start > 0 {
		last.start = time.Unix(start, 0)
	}
	if end > 0 {
		last.end = time.Unix(end, 0)
	}
	return n, last
}

// lastRun is how a container's last killed run ended, as its restarts
// file says.
type lastRun struct {
	code       int
	reason     string
	start, end time.Time // zero when not read
}

// keptJob is a job of one container, main, running snippet, with
// restart policy p and a grace period of 2 s.
func keptJob(p RestartPolicy, snippet string) *Job {
	job := testJob()
	job.Containers = []Container{sh("main", snippet)}
	job.Restart, job.Grace = p, 2
	return job
}

// TestLivenessProbeRestartsTheContainer: a liveness probe that fails kills
// its container (SIGTERM to its process group) and, with restartPolicy
// Always, the script runs it again, at once the first time, and counts
// each restart in the restarts file without writing the exit file. Told
// to stop during the back-off that follows, the script runs nothing again
// and writes the exit files.
func TestLivenessProbeRestartsTheContainer(t *testing.T) {
	for _, shell := range shells {
		t.Run(shell, func(t *testing.T) {
			job := keptJob(RestartAlways, `echo "run $$"; sleep 600 & wait`)
			job.Containers[0].Liveness = check("false")
			start := time.Now()
			dir, cmd := startJob(t, shell, job, RuntimeNone)
			var first, second time.Duration
			waitFor(t, func() bool {
				n, _ := restartsOf(t, dir, "main")
				if n >= 1 && first == 0 {
					first = time.Since(start)
				}
				if n >= 2 {
					second = time.Since(start)
				}
				return n >= 2
			})
			t.Logf("restart 1 after %v, restart 2 after %v", first, second)
			n, last := restartsOf(t, dir, "main")
			if n != 2 || last.reason != "liveness" || last.code != 143 || last.start.IsZero() || last.end.Before(last.start) {
				t.Errorf("restarts = %d %+v; want 2, killed by its liveness probe with 143", n, last)
			}
			wantNoFile(t, dir, ExitFile("main"))
			// Restart 2 waits for kubelet's 10 s back-off: stop the job meanwhile.
			stopped := time.Now()
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			if d := time.Since(stopped); d > 5*time.Second {
				t.Errorf("the job took %v to stop during the back-off; want it to stop at once", d)
			}
			if n, _ := restartsOf(t, dir, "main"); n != 2 {
				t.Errorf("%d restarts after the stop; want still 2", n)
			}
			wantFile(t, dir, ExitFile("main"), "143\n")
			wantFile(t, dir, JobExitFile, "143\n")
			wantNoFile(t, dir, KilledFile("main")) // stopped, not killed by the probe
			runs := 0
			for _, l := range logLines(t, dir, "main") {
				if strings.HasPrefix(l, "run ") {
					runs++
				}
			}
			if runs != 2 {
				t.Errorf("the container ran %d times; want 2 (the first run and restart 1)", runs)
			}
			out := readFile(t, dir, JobOutFile)
			if !strings.Contains(out, "liveness probe of container main failed 1 times: killing the container") ||
				!strings.Contains(out, "restart 2 in 10 s (restartPolicy Always)") {
				t.Errorf("job.out = %q; want the kills and restarts told", out)
			}
		})
	}
}

// TestLivenessProbeKillWithRestartPolicyNever: the killed container ends
// with its code, is not run again, and the job ends with it.
func TestLivenessProbeKillWithRestartPolicyNever(t *testing.T) {
	job := keptJob(RestartNever, `trap 'echo got TERM; exit 3' TERM; while :; do sleep 0.05; done`)
	job.Containers[0].Liveness = check("false")
	start := time.Now()
	dir := runJob(t, "sh", job)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the job took %v; want it to end once the probe killed its container", d)
	}
	wantFile(t, dir, ExitFile("main"), "3\n")
	wantFile(t, dir, JobExitFile, "3\n")
	wantFile(t, dir, KilledFile("main"), "liveness\n")
	wantNoFile(t, dir, RestartsFile("main"))
	// The process group got SIGTERM: sh may say its sleep was Terminated.
	if log := logLines(t, dir, "main"); !strings.Contains(strings.Join(log, "\n"), "got TERM") {
		t.Errorf("main log = %q; want the container to have got SIGTERM", log)
	}
	if out := readFile(t, dir, JobOutFile); !strings.Contains(out, "is not run again (restartPolicy Never)") {
		t.Errorf("job.out = %q; want it to say the container is not run again", out)
	}
}

// TestLivenessProbeKillsAfterTheGracePeriod: a container that ignores
// SIGTERM is killed (SIGKILL) after the pod's grace period.
func TestLivenessProbeKillsAfterTheGracePeriod(t *testing.T) {
	for _, shell := range shells {
		t.Run(shell, func(t *testing.T) {
			job := keptJob(RestartOnFailure, `trap '' TERM; echo up; while [ ! -e stop ]; do sleep 0.05; done`)
			job.Containers[0].Liveness = check("false")
			dir, cmd := startJob(t, shell, job, RuntimeNone)
			defer func() {
				// The container ignores SIGTERM: a file ends it.
				_ = os.WriteFile(filepath.Join(dir, "stop"), nil, 0o600)
				_ = cmd.Process.Signal(syscall.SIGTERM)
				_ = cmd.Wait()
			}()
			waitFor(t, func() bool { n, _ := restartsOf(t, dir, "main"); return n >= 1 })
			_, last := restartsOf(t, dir, "main")
			if last.code != 137 {
				t.Errorf("the killed run ended with %d; want 137 (SIGKILL)", last.code)
			}
			if d := last.end.Sub(last.start); d < 2*time.Second {
				t.Errorf("the run ended %v after it started; want the probe's second and the 2 s grace period", d)
			}
		})
	}
}

// TestStartupProbeGatesLiveness: until the startup probe passes, neither
// the liveness nor the readiness probe runs (a liveness probe that would
// fail then does not kill the container); the started file says when it
// passed. A startup probe that keeps failing kills its container.
func TestStartupProbeGatesLiveness(t *testing.T) {
	job := keptJob(RestartAlways, `sleep 3; touch up; echo up; sleep 600`)
	job.Containers = append(job.Containers, sh("never", "sleep 600"))
	job.Containers[0].Startup = check("test", "-e", "up")
	job.Containers[0].Startup.Failure = 10
	job.Containers[0].Liveness = check("test", "-e", "up")
	job.Containers[0].Readiness = check("true")
	job.Containers[1].Startup = check("false")
	job.Containers[1].Startup.Failure = 2
	start := time.Now()
	dir, cmd := startJob(t, "sh", job, RuntimeNone)
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	var startedAt time.Duration
	waitFor(t, func() bool {
		if fileText(dir, StartedFile("main")) == "1" {
			startedAt = time.Since(start)
			return true
		}
		if s := fileText(dir, ReadyFile("main")); s == "1" {
			t.Fatalf("main.ready = %q before its startup probe passed; want 0", s)
		}
		return false
	})
	t.Logf("startup probe passed after %v", startedAt)
	if startedAt < 3*time.Second {
		t.Errorf("main started after %v; want after its file, 3 s in", startedAt)
	}
	waitFor(t, func() bool { return fileText(dir, ReadyFile("main")) == "1" })
	waitFor(t, func() bool { n, _ := restartsOf(t, dir, "never"); return n >= 1 })
	if n, _ := restartsOf(t, dir, "main"); n != 0 {
		t.Errorf("main restarted %d times; want none: its liveness probe must wait for its startup probe", n)
	}
	if _, last := restartsOf(t, dir, "never"); last.reason != "startup" {
		t.Errorf("never was killed for %q; want its startup probe", last.reason)
	}
	if s := fileText(dir, StartedFile("never")); s != "0" {
		t.Errorf("never.started = %q; want 0", s)
	}
}

// TestPostStartHookRuns: the hook runs right after its container starts
// (its file appears) and before its probes begin; a hook that fails kills
// its container, which runs again as restartPolicy says, and the job's
// output says so.
func TestPostStartHookRuns(t *testing.T) {
	for _, shell := range shells {
		t.Run(shell, func(t *testing.T) {
			job := keptJob(RestartAlways, `while [ ! -e hooked ]; do sleep 0.05; done; echo saw the hook; sleep 600`)
			job.Containers = append(job.Containers, sh("bad", "echo bad run; sleep 600"))
			job.Containers[0].PostStart = &Probe{Kind: ProbeExec, Command: []string{"sh", "-c", "sleep 1; echo hi > hooked"}, Period: 1, Timeout: 2, Success: 1, Failure: 1}
			// The readiness probe passes only once the hook ran: it must not begin before.
			job.Containers[0].Readiness = check("test", "-e", "hooked")
			job.Containers[1].PostStart = &Probe{Kind: ProbeExec, Command: []string{"sh", "-c", "exit 3"}, Period: 1, Timeout: 2, Success: 1, Failure: 1}
			dir, cmd := startJob(t, shell, job, RuntimeNone)
			waitFor(t, func() bool { return fileText(dir, ReadyFile("main")) == "1" })
			wantFile(t, dir, "hooked", "hi\n")
			waitFor(t, func() bool { n, _ := restartsOf(t, dir, "bad"); return n >= 1 })
			if _, last := restartsOf(t, dir, "bad"); last.reason != "postStart" || last.code != 143 {
				t.Errorf("bad's last run: %+v; want killed (143) for its postStart hook", last)
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			wantLog(t, dir, "main", "saw the hook")
			out := readFile(t, dir, JobOutFile)
			if !strings.Contains(out, "postStart hook of container main ran") ||
				!strings.Contains(out, "postStart hook of container bad failed with exit code 3: killing the container") {
				t.Errorf("job.out = %q; want the hooks' ends", out)
			}
			wantFile(t, dir, ExitFile("main"), "143\n")
			if s := fileText(dir, ExitFile("bad")); s == "" {
				t.Errorf("bad has no exit file after the stop")
			}
		})
	}
}

// TestPostStartHookFailureWithRestartPolicyNever: the container its hook
// killed ends with its code and is not run again.
func TestPostStartHookFailureWithRestartPolicyNever(t *testing.T) {
	job := keptJob(RestartNever, "echo run; sleep 600")
	job.Containers[0].PostStart = &Probe{Kind: ProbeExec, Command: []string{"false"}, Period: 1, Timeout: 2, Success: 1, Failure: 1}
	dir := runJob(t, "sh", job)
	wantFile(t, dir, ExitFile("main"), "143\n")
	wantFile(t, dir, JobExitFile, "143\n")
	wantFile(t, dir, KilledFile("main"), "postStart\n")
	wantNoFile(t, dir, RestartsFile("main"))
}

// TestLivenessProbeKillsNothingWhileStopping: once the job is told to
// stop, its liveness probes kill nothing more: the preStop hook that makes
// the probe fail runs to its end, then the container gets its SIGTERM from
// the stop, and runs nothing again.
func TestLivenessProbeKillsNothingWhileStopping(t *testing.T) {
	job := keptJob(RestartAlways, `trap 'echo got TERM; exit 0' TERM; echo up; while :; do sleep 0.05; done`)
	job.Containers[0].Liveness = check("test", "!", "-e", "sick")
	job.Containers[0].PreStop = &Probe{Kind: ProbeExec, Command: []string{"sh", "-c", "touch sick; sleep 3"}, Period: 1, Timeout: 10, Success: 1, Failure: 1}
	dir, cmd := startJob(t, "sh", job, RuntimeNone)
	waitFor(t, func() bool { return strings.Contains(fileText(dir, LogFile("main")), "up") })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	wantFile(t, dir, ExitFile("main"), "0\n")
	wantNoFile(t, dir, RestartsFile("main"))
	wantNoFile(t, dir, KilledFile("main"))
	if out := readFile(t, dir, JobOutFile); strings.Contains(out, "killing the container") {
		t.Errorf("job.out = %q; want no kill by the probe while stopping", out)
	}
}

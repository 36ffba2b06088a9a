package jobscript

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests run rendered scripts of the none runtime for real, under sh and
// bash, in a temporary job directory, with a fake SLURM_JOB_ID.

var stampedLine = regexp.MustCompile(`^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) (.*)$`)

// sh is a container that runs a shell snippet under the none runtime.
func sh(name, snippet string) Container {
	return Container{Name: name, Command: []string{"sh", "-c", snippet}, EnvFile: envFilePath(name)}
}

// startJob writes job's files and script for runtime rt into a new job
// directory and starts the script under shell.
func startJob(t *testing.T, shell string, job *Job, rt Runtime) (dir string, cmd *exec.Cmd) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "ns-uid")
	for _, f := range append([]File{}, job.Files...) {
		p := filepath.Join(dir, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, f.Mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, cs := range [][]Container{job.Init, job.Containers} {
		for _, c := range cs {
			p := filepath.Join(dir, c.EnvFile)
			if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, envFileMode); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	script, err := Script(job, ScriptOptions{JobDir: dir, Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	checkShell(t, script)
	if err := os.WriteFile(filepath.Join(dir, ScriptFile), script, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, JobOutFile))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	cmd = exec.CommandContext(ctx, shell, ScriptFile)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SLURM_JOB_ID=4242", "TMPDIR="+t.TempDir())
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return dir, cmd
}

// runJob runs job's script for the none runtime under shell to its end.
func runJob(t *testing.T, shell string, job *Job) string {
	t.Helper()
	return runJobWith(t, shell, job, RuntimeNone)
}

func runJobWith(t *testing.T, shell string, job *Job, rt Runtime) string {
	t.Helper()
	dir, cmd := startJob(t, shell, job, rt)
	_ = cmd.Wait() // the exit code is checked through job.exit
	return dir
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func wantFile(t *testing.T, dir, name, want string) {
	t.Helper()
	if got := readFile(t, dir, name); got != want {
		t.Errorf("%s = %q; want %q", name, got, want)
	}
}

func wantNoFile(t *testing.T, dir, name string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: got %v; want it missing", name, err)
	}
}

// logLines reads a container's log, checks that every line starts with a
// UTC timestamp from around now, and returns the lines without it.
func logLines(t *testing.T, dir, container string) []string {
	t.Helper()
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(readFile(t, dir, LogFile(container))))
	for sc.Scan() {
		m := stampedLine.FindStringSubmatch(sc.Text())
		if m == nil {
			t.Errorf("%s: line %q has no timestamp", container, sc.Text())
			continue
		}
		ts, err := time.Parse(LogTimeLayout, m[1])
		if err != nil || time.Since(ts) > time.Minute || time.Until(ts) > time.Minute {
			t.Errorf("%s: timestamp %q is not now (%v)", container, m[1], err)
		}
		lines = append(lines, m[2])
	}
	return lines
}

func wantLog(t *testing.T, dir, container string, want ...string) {
	t.Helper()
	got := logLines(t, dir, container)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s log = %q; want %q", container, got, want)
	}
}

func envFiles(t *testing.T, vars map[string][]envEntry) []File {
	t.Helper()
	var files []File
	for name, vs := range vars {
		data, err := formatEnvFile(vs)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, File{Path: envFilePath(name), Data: data, Mode: envFileMode})
	}
	return files
}

var shells = []string{"sh", "bash"}

func TestScriptRunsContainers(t *testing.T) {
	for _, shell := range shells {
		t.Run(shell, func(t *testing.T) {
			job := testJob()
			job.PreExec = "export FROM_PRE_EXEC='pre exec'\ncd /"
			job.Dirs = []string{"volumes/scratch"}
			job.Init = []Container{sh("init", `echo "$QUOTED"; echo to-stderr >&2; printf 'no newline'`)}
			job.Containers = []Container{
				sh("first", `echo "$FROM_PRE_EXEC"; pwd`),
				sh("second", `echo "$DOLLAR"; exit 0`),
			}
			job.Containers[0].WorkingDir = "/"
			job.Files = envFiles(t, map[string][]envEntry{
				"init":   {{Name: "QUOTED", Value: "it's \"quoted\"\nand $HOME `id`"}},
				"second": {{Name: "DOLLAR", Value: "$(id) $$"}},
			})
			dir := runJob(t, shell, job)
			wantLog(t, dir, "init", `it's "quoted"`, "and $HOME `id`", "to-stderr", "no newline")
			wantLog(t, dir, "first", "pre exec", "/")
			wantLog(t, dir, "second", "$(id) $$")
			for _, name := range []string{"init", "first", "second"} {
				wantFile(t, dir, ExitFile(name), "0\n")
				wantTimes(t, dir, name)
			}
			wantFile(t, dir, JobIDFile, "4242\n")
			wantFile(t, dir, JobExitFile, "0\n")
			if fi, err := os.Stat(filepath.Join(dir, "volumes/scratch")); err != nil || !fi.IsDir() {
				t.Errorf("volumes/scratch: got %v; want a directory", err)
			}
			if t.Failed() {
				t.Logf("job.out:\n%s", readFile(t, dir, JobOutFile))
			}
		})
	}
}

// wantTimes checks the time file of a container that ran: a start and a
// finish time, in order, within a minute of now.
func wantTimes(t *testing.T, dir, container string) {
	t.Helper()
	text := readFile(t, dir, TimeFile(container))
	var start, end int64
	_, err := fmt.Sscanf(text, "%d %d\n", &start, &end)
	if err != nil || end < start || time.Since(time.Unix(start, 0)) > time.Minute || time.Since(time.Unix(start, 0)) < -time.Second {
		t.Errorf("%s = %q (%v); want its start and finish times", TimeFile(container), text, err)
	}
}

func TestScriptStopsAtFailingInit(t *testing.T) {
	for _, shell := range shells {
		t.Run(shell, func(t *testing.T) {
			job := testJob()
			job.Init = []Container{sh("one", "echo one"), sh("two", "echo two; exit 3"), sh("three", "echo three")}
			job.Containers = []Container{sh("main", "echo main")}
			// Left by an earlier run of a requeued job: must go.
			job.Files = []File{{Path: ExitFile("main"), Data: []byte("0\n"), Mode: 0o600}}
			dir := runJob(t, shell, job)
			wantFile(t, dir, ExitFile("one"), "0\n")
			wantFile(t, dir, ExitFile("two"), "3\n")
			wantLog(t, dir, "two", "two")
			wantNoFile(t, dir, ExitFile("three"))
			wantNoFile(t, dir, LogFile("three"))
			wantNoFile(t, dir, TimeFile("three"))
			wantNoFile(t, dir, ExitFile("main"))
			wantFile(t, dir, JobExitFile, "3\n")
			if out := readFile(t, dir, JobOutFile); !strings.Contains(out, "init container two failed with exit code 3") {
				t.Errorf("job.out = %q; want it to name the failed init container", out)
			}
		})
	}
}

func TestScriptExitsWithFirstFailure(t *testing.T) {
	for _, shell := range shells {
		t.Run(shell, func(t *testing.T) {
			job := testJob()
			job.PreExec = "set -eu" // must not stop the script at the first failure
			job.Containers = []Container{
				sh("ok", "exit 0"),
				// "late" fails after "early" does: the pod's order decides.
				sh("late", "while [ ! -e early.exit ]; do sleep 0.05; done; exit 5"),
				sh("early", "exit 6"),
			}
			dir := runJob(t, shell, job)
			wantFile(t, dir, ExitFile("ok"), "0\n")
			wantFile(t, dir, ExitFile("late"), "5\n")
			wantFile(t, dir, ExitFile("early"), "6\n")
			wantFile(t, dir, JobExitFile, "5\n")
		})
	}
}

func TestScriptPreExecFailure(t *testing.T) {
	for _, shell := range shells {
		t.Run(shell, func(t *testing.T) {
			job := testJob()
			job.PreExec = "echo before\n(exit 4)"
			job.Containers = []Container{sh("main", "echo main")}
			dir := runJob(t, shell, job)
			wantFile(t, dir, JobExitFile, "4\n")
			wantNoFile(t, dir, LogFile("main"))
			if out := readFile(t, dir, JobOutFile); !strings.Contains(out, "before") || !strings.Contains(out, "pre-exec failed with exit code 4") {
				t.Errorf("job.out = %q; want the snippet's output and the failure", out)
			}
		})
	}
}

func TestScriptForwardsSIGTERM(t *testing.T) {
	for _, shell := range shells {
		t.Run(shell, func(t *testing.T) {
			job := testJob()
			job.Containers = []Container{
				sh("trapper", `trap 'echo got TERM; exit 7' TERM; echo ready; while :; do sleep 0.05; done`),
				sh("sleeper", "echo ready; exec sleep 600"),
			}
			dir, cmd := startJob(t, shell, job, RuntimeNone)
			waitFor(t, func() bool {
				a, _ := os.ReadFile(filepath.Join(dir, LogFile("trapper")))
				b, _ := os.ReadFile(filepath.Join(dir, LogFile("sleeper")))
				return strings.Contains(string(a), "ready") && strings.Contains(string(b), "ready")
			})
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_ = cmd.Wait()
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("the job took %v to stop; want it to stop at once", d)
			}
			wantLog(t, dir, "trapper", "ready", "got TERM")
			wantFile(t, dir, ExitFile("trapper"), "7\n")
			wantFile(t, dir, ExitFile("sleeper"), "143\n")
			wantFile(t, dir, JobExitFile, "7\n")
		})
	}
}

func TestScriptKillsWhatAContainerLeaves(t *testing.T) {
	job := testJob()
	job.Containers = []Container{sh("main", "echo main; sleep 600 & echo left")}
	start := time.Now()
	dir := runJob(t, "sh", job)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the job took %v; want it to end with its container", d)
	}
	wantLog(t, dir, "main", "main", "left")
	wantFile(t, dir, JobExitFile, "0\n")
}

// waitFor polls cond until it holds, failing the test after 10 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		<-tick.C
	}
}

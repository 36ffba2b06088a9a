package hostnode

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/testrig"
)

// needRoot skips (fails in CI) a test that makes mount namespaces.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testrig.Unavailable(t, "mount namespaces need root")
	}
}

// runHelper runs spec through the init helper (this test binary) and
// returns its output and exit code.
func runHelper(t *testing.T, spec initSpec) (string, int32) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "0.log")
	lf, stdout, stderr, err := startLogFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	p, err := startProcess(exe, spec, []string{"PATH=" + defaultPath, "GREETING=hello"}, stdout, stderr)
	stdout.Close()
	stderr.Close()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	case <-time.After(30 * time.Second):
		p.stop(0)
		t.Fatal("the process did not exit")
	}
	<-lf.Done()
	var out bytes.Buffer
	if err := streamLog(t.Context(), logPath, nil, logOptions{Tail: -1}, &out); err != nil {
		t.Fatal(err)
	}
	code, _ := p.exitStatus()
	return out.String(), code
}

func TestInitHelperMounts(t *testing.T) {
	needRoot(t)
	before, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	hostHosts, _ := os.ReadFile("/etc/hosts")
	dir := t.TempDir()
	vol := filepath.Join(dir, "volume")
	if _, err := writeVolumeDir(vol, volumeFiles{"greeting": {Data: []byte("hi from a configMap"), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	scratch := filepath.Join(dir, "scratch")
	os.Mkdir(scratch, 0o777)
	hosts := filepath.Join(dir, "etc-hosts")
	os.WriteFile(hosts, []byte("127.96.0.9\tredis.default\n"), 0o644)
	target := filepath.Join(dir, "mnt", "config") // missing: the helper makes it

	out, code := runHelper(t, initSpec{
		Argv: []string{"sh", "-c", `cat "$0/greeting"; echo; cat /etc/hosts; echo "$GREETING"; pwd
			touch "$0/new" 2>/dev/null && echo writable || echo read-only
			touch "$1/new" && echo scratch-writable`, target, "/scratch-test"},
		Dir: "/tmp",
		Mounts: []initMount{
			{Source: vol, Target: target, ReadOnly: true},
			{Source: scratch, Target: "/scratch-test"},
			{Source: hosts, Target: "/etc/hosts", ReadOnly: true},
		},
	})
	want := "hi from a configMap\n127.96.0.9\tredis.default\nhello\n/tmp\nread-only\nscratch-writable\n"
	if code != 0 || out != want {
		t.Errorf("helper exited %d with output\n%s\nwant 0 and\n%s", code, out, want)
	}
	if _, err := os.Stat(filepath.Join(scratch, "new")); err != nil {
		t.Errorf("a write to the emptyDir did not reach its host directory: %v", err)
	}
	// the host saw none of it
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Errorf("the mount point on the host holds %d entries; want it empty", len(entries))
	}
	if after, _ := os.ReadFile("/etc/hosts"); !bytes.Equal(after, hostHosts) {
		t.Error("the host's /etc/hosts changed")
	}
	after, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("the host's mounts changed:\nbefore\n%s\nafter\n%s", before, after)
	}
	os.Remove("/scratch-test")
}

func TestInitHelperFailure(t *testing.T) {
	needRoot(t)
	out, code := runHelper(t, initSpec{Argv: []string{"no-such-command-anywhere"}})
	if code != 127 || !strings.Contains(out, "sluice-hostnode init: command: ") {
		t.Errorf("exit %d, output %q; want 127 and the helper's error", code, out)
	}
	out, code = runHelper(t, initSpec{Argv: []string{"true"}, Mounts: []initMount{{Source: "/nonexistent", Target: "/x"}}})
	if code != 127 || !strings.Contains(out, "sluice-hostnode init: mount /x: ") {
		t.Errorf("exit %d, output %q; want 127 and the mount error", code, out)
	}
}

func TestProcessStop(t *testing.T) {
	needRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		script string
		grace  time.Duration
		code   int32
		signal syscall.Signal
	}{
		{"exits on SIGTERM", `trap "exit 3" TERM; echo ready; while :; do sleep 0.05; done`, 10 * time.Second, 3, 0},
		{"killed after the grace period", `trap "" TERM; echo ready; while :; do sleep 0.05; done`, 300 * time.Millisecond, 137, syscall.SIGKILL},
	} {
		outR, outW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		p, err := startProcess(exe, initSpec{Argv: []string{"sh", "-c", tc.script}}, []string{"PATH=" + defaultPath}, outW, outW)
		outW.Close()
		if err != nil {
			t.Fatal(err)
		}
		// the shell set its trap once it says so
		if line := newLineReader(outR).line(t); line != "ready" {
			t.Fatalf("%s: the script said %q", tc.name, line)
		}
		start := time.Now()
		p.stop(tc.grace)
		code, sig := p.exitStatus()
		if code != tc.code || sig != tc.signal {
			t.Errorf("%s: exit %d signal %v; want %d %v", tc.name, code, sig, tc.code, tc.signal)
		}
		if took := time.Since(start); took > tc.grace+5*time.Second {
			t.Errorf("%s: stop took %v", tc.name, took)
		}
		outR.Close()
		// its last members may be zombies a moment longer
		waitFor(t, tc.name+": the process group to go", func() bool { return syscall.Kill(-p.Pid(), 0) == syscall.ESRCH })
	}
}

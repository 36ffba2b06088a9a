package doctor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/relay"
)

func TestParseProbe(t *testing.T) {
	out := "uid 1001\nruntime ok /usr/bin/ch-run 0.31\nsockroot ok /tmp/s/sluice-doctor.AbC123\n" +
		"portstart 0\nuid 0\nready\nportstart 99\n"
	got := parseProbe([]byte(out))
	want := map[string]string{"uid": "1001", "runtime": "ok /usr/bin/ch-run 0.31", "sockroot": "ok /tmp/s/sluice-doctor.AbC123", "portstart": "0"}
	if !got.ready || len(got.facts) != len(want) {
		t.Fatalf("got %+v; want %v, ready", got, want)
	}
	for k, v := range want {
		if got.facts[k] != v {
			t.Errorf("%s = %q; want %q (the first line wins, nothing after ready)", k, got.facts[k], v)
		}
	}
	if got := parseProbe([]byte("uid 1\nportstart 0")); got.ready {
		t.Error("ready without a ready line")
	}
	long := parseProbe([]byte("runtime " + strings.Repeat("x", 3*maxProbeLine) + "\nready\n"))
	if len(long.facts["runtime"]) > maxProbeLine || !long.ready {
		t.Errorf("a long line kept %d bytes", len(long.facts["runtime"]))
	}
}

func FuzzParseProbe(f *testing.F) {
	f.Add([]byte("uid 1001\nruntime ok /usr/bin/ch-run 0.31\nsockroot made /tmp/x/sluice-doctor.abcdef\nportstart 1024\nready\n"))
	f.Add([]byte("sockroot unsafe /tmp is owned by uid 7\n\x00ready"))
	f.Fuzz(func(t *testing.T, out []byte) {
		r := parseProbe(out)
		for k, v := range r.facts {
			if len(v) > maxProbeLine || strings.Contains(k, "\n") {
				t.Fatalf("fact %q = %d bytes", k, len(v))
			}
		}
		// The decisions take anything the probe may print.
		checkLine(t, decideRuntime("charliecloud", "ch-run", "n1", r.facts["runtime"]))
		if c, dir := decideSocketDir("/tmp/x", "n1", r.facts["sockroot"], true); dir != "" &&
			(filepath.Dir(dir) != "/tmp/x" || c.Status != OK && c.Status != Warn) {
			t.Fatalf("socket dir %q accepted with %+v", dir, c)
		}
		checkLine(t, decidePortStart(r.facts["portstart"], "n1", true))
	})
}

func TestDecideRuntime(t *testing.T) {
	for _, tc := range []struct {
		runtime, fact string
		status        Status
		found         string
	}{
		{"charliecloud", "ok /usr/bin/ch-run 0.31", OK, "charliecloud on n1: /usr/bin/ch-run 0.31"},
		{"apptainer", "ok /opt/bin/apptainer apptainer version 1.3.0", OK, "apptainer version 1.3.0"},
		{"apptainer", "ok /opt/bin/apptainer", OK, "(no version printed)"},
		{"apptainer", "missing apptainer", Fail, "apptainer not found"},
		{"none", "none", OK, "run on n1 directly"},
		{"charliecloud", "", Warn, "the probe said"},
	} {
		got := decideRuntime(tc.runtime, tc.runtime, "n1", tc.fact)
		if tc.runtime == "charliecloud" {
			got = decideRuntime(tc.runtime, "ch-run", "n1", tc.fact)
		}
		if got.Status != tc.status || !strings.Contains(got.Found, tc.found) {
			t.Errorf("%s %q: got %s %q; want %s containing %q", tc.runtime, tc.fact, got.Status, got.Found, tc.status, tc.found)
		}
	}
}

func TestDecideSocketDir(t *testing.T) {
	for _, tc := range []struct {
		fact    string
		reverse bool
		status  Status
		dir     string
	}{
		{"ok /tmp/s/sluice-doctor.AbC123", true, OK, "/tmp/s/sluice-doctor.AbC123"},
		{"made /tmp/s/sluice-doctor.AbC123", true, Warn, "/tmp/s/sluice-doctor.AbC123"},
		{"ok /tmp/s/sluice-doctor.AbC123/../../../etc", true, Warn, ""},
		{"ok /etc/sluice-doctor.AbC123", true, Warn, ""},
		{"ok /tmp/s/other", true, Warn, ""},
		{"unsafe /tmp/s is owned by uid 7", true, Fail, ""},
		{"unsafe /tmp/s is owned by uid 7", false, Warn, ""},
		{"unusable it is not a directory", true, Fail, ""},
		{"unset", true, Warn, ""},
		{"what", true, Warn, ""},
	} {
		got, dir := decideSocketDir("/tmp/s", "n1", tc.fact, tc.reverse)
		if got.Status != tc.status || dir != tc.dir || (got.Status != OK && got.Fix == "" && !strings.Contains(got.Found, "unexpected")) {
			t.Errorf("%q: got %+v, %q; want %s, %q", tc.fact, got, dir, tc.status, tc.dir)
		}
	}
}

func TestDecidePortStart(t *testing.T) {
	for _, tc := range []struct {
		fact    string
		reverse bool
		status  Status
	}{
		{"0", true, OK}, {"1", true, OK}, {"1024", true, Warn}, {"1024", false, OK},
		{"", true, Warn}, {"-3", true, Warn}, {"99999", true, Warn}, {"12ab", true, Warn},
	} {
		got := decidePortStart(tc.fact, "n1", tc.reverse)
		if got.Status != tc.status {
			t.Errorf("%q reverse=%v: got %+v; want %s", tc.fact, tc.reverse, got, tc.status)
		}
	}
}

// TestProbeScript runs the probe as the job runs it, with sh on this
// machine: a socket directory root that does not exist yet, no runtime,
// and the done file already there.
func TestProbeScript(t *testing.T) {
	script := relay.RootCheckScript + "\n" + probeScript
	if out, err := exec.Command("sh", "-n", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("sh -n: %v\n%s", err, out)
	}
	if _, err := exec.LookPath("shellcheck"); err == nil {
		if out, err := exec.Command("shellcheck", "-s", "sh", "probe.sh").CombinedOutput(); err != nil {
			t.Errorf("shellcheck probe.sh: %v\n%s", err, out)
		}
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "sock")
	done := filepath.Join(dir, "done")
	if err := os.WriteFile(done, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	job := probeJob("doctor-x", root, "", done)
	argv := job.Containers[0].Command
	if argv[0] != "/bin/sh" || argv[2] != script {
		t.Fatalf("probe command %q", argv[:2])
	}
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, out)
	}
	res := parseProbe(out)
	if !res.ready || res.facts["runtime"] != "none" || !strings.HasSuffix(string(out), "finished\n") {
		t.Fatalf("probe said:\n%s", out)
	}
	c, sockDir := decideSocketDir(root, "here", res.facts["sockroot"], true)
	if c.Status != Warn || !strings.Contains(c.Found, "was missing") || sockDir == "" {
		t.Errorf("socket dir: %+v, %q\n%s", c, sockDir, out)
	}
	if _, err := os.Stat(sockDir); !os.IsNotExist(err) {
		t.Errorf("the probe left %s: %v", sockDir, err)
	}
	if c := decidePortStart(res.facts["portstart"], "here", false); c.Status != OK {
		t.Errorf("portstart: %+v", c)
	}
}

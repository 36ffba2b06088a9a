package jobscript

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// checkShell checks a rendered script with sh -n, bash -n and shellcheck.
// shellcheck is skipped, with the reason, only when it is not installed.
func checkShell(t *testing.T, script []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "job.sh")
	if err := os.WriteFile(path, script, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"sh", "-n", path}, {"bash", "-n", path}} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Logf("shellcheck not run: %v (apt-get install shellcheck)", err)
		return
	}
	if out, err := exec.Command("shellcheck", "-s", "sh", path).CombinedOutput(); err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}

func testJob() *Job {
	return &Job{
		Namespace: "ns", Name: "pod", UID: "0c7f2a4e-1111-2222-3333-444455556666",
		Containers: []Container{{Name: "main", Image: "busybox", Command: []string{"true"}}},
	}
}

func TestScriptRefuses(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Job, *ScriptOptions)
		want string
	}{
		{"job dir with space", func(_ *Job, o *ScriptOptions) { o.JobDir = "/data/a b" }, "job directory"},
		{"job dir with percent", func(_ *Job, o *ScriptOptions) { o.JobDir = "/data/%j" }, "job directory"},
		{"job dir relative", func(_ *Job, o *ScriptOptions) { o.JobDir = "data" }, "job directory"},
		{"job dir with colon", func(_ *Job, o *ScriptOptions) { o.JobDir = "/data:x" }, "job directory"},
		{"unknown runtime", func(_ *Job, o *ScriptOptions) { o.Runtime = "docker" }, "unknown container runtime"},
		{"namespace with newline", func(j *Job, _ *ScriptOptions) { j.Namespace = "ns\n#SBATCH --x" }, "namespace"},
		{"name with space", func(j *Job, _ *ScriptOptions) { j.Name = "a b" }, "pod name"},
		{"uid with hash", func(j *Job, _ *ScriptOptions) { j.UID = "a#b" }, "pod uid"},
		{"no containers", func(j *Job, _ *ScriptOptions) { j.Containers = nil }, "no containers"},
		{"container named job", func(j *Job, _ *ScriptOptions) { j.Containers[0].Name = "job" }, "reserved"},
		{"container name twice", func(j *Job, _ *ScriptOptions) { j.Init = j.Containers }, "used twice"},
		{"bad flag", func(j *Job, _ *ScriptOptions) { j.Flags = []string{"--x=1 --output=/tmp"} }, "sbatch flag"},
		{"reserved flag", func(j *Job, _ *ScriptOptions) { j.Flags = []string{"--out=/tmp/x"} }, "--output"},
		{"dir escaping", func(j *Job, _ *ScriptOptions) { j.Dirs = []string{"volumes/../../x"} }, "leaves"},
		{"absolute dir", func(j *Job, _ *ScriptOptions) { j.Dirs = []string{"/x"} }, "absolute"},
		{"negative cpus", func(j *Job, _ *ScriptOptions) { j.Resources.CPUs = -1 }, "negative"},
		{"bad image", func(j *Job, _ *ScriptOptions) { j.Containers[0].Image = "-v" }, "image"},
		{"relative image path", func(j *Job, _ *ScriptOptions) { j.Containers[0].Image = "./img.sif" }, "image"},
		{"http image", func(j *Job, _ *ScriptOptions) { j.Containers[0].Image = "http://x/y" }, "image"},
		{"relative working dir", func(j *Job, _ *ScriptOptions) { j.Containers[0].WorkingDir = "w" }, "working directory"},
		{"mount target with comma", func(j *Job, _ *ScriptOptions) {
			j.Containers[0].Mounts = []Mount{{Source: "volumes/a", Target: "/a,/b"}}
		}, "mount target"},
		{"mount source escaping", func(j *Job, _ *ScriptOptions) {
			j.Containers[0].Mounts = []Mount{{Source: "../a", Target: "/a"}}
		}, "mount source"},
		{"mount under none", func(j *Job, o *ScriptOptions) {
			o.Runtime = RuntimeNone
			j.Containers[0].Mounts = []Mount{{Source: "volumes/a", Target: "/a"}}
		}, "cannot mount"},
		{"charliecloud without command", func(j *Job, o *ScriptOptions) {
			o.Runtime = RuntimeCharliecloud
			j.Containers[0].Command = nil
		}, "needs a command"},
		{"charliecloud with docker uri", func(j *Job, o *ScriptOptions) {
			o.Runtime = RuntimeCharliecloud
			j.Containers[0].Image = "docker://busybox"
		}, "image"},
		{"none without command", func(j *Job, o *ScriptOptions) {
			o.Runtime = RuntimeNone
			j.Containers[0].Command = nil
			j.Containers[0].Args = []string{"x"}
		}, "needs a command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := testJob()
			opts := ScriptOptions{JobDir: "/data/ns-uid", Runtime: RuntimeApptainer}
			tt.edit(job, &opts)
			_, err := Script(job, opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v; want an error containing %q", err, tt.want)
			}
		})
	}
	if _, err := Script(nil, ScriptOptions{}); err == nil {
		t.Error("got no error for a nil job; want one")
	}
}

func TestScriptImages(t *testing.T) {
	tests := []struct {
		rt    Runtime
		image string
		want  string
	}{
		{RuntimeApptainer, "busybox", "docker://busybox"},
		{RuntimeApptainer, "ghcr.io/org/img:1.2@sha256:0123456789abcdef0123456789abcdef", "docker://ghcr.io/org/img:1.2@sha256:0123456789abcdef0123456789abcdef"},
		{RuntimeApptainer, "localhost:5000/x", "docker://localhost:5000/x"},
		{RuntimeApptainer, "docker://alpine:3", "docker://alpine:3"},
		{RuntimeApptainer, "oras://reg/x:1", "oras://reg/x:1"},
		{RuntimeApptainer, "library://lib/x", "library://lib/x"},
		{RuntimeSingularity, "/images/x.sif", "/images/x.sif"},
		{RuntimeCharliecloud, "/images/busybox", "/images/busybox"},
		{RuntimeCharliecloud, "example.com:5050/foo", "example.com:5050/foo"},
	}
	for _, tt := range tests {
		got, err := tt.rt.image(tt.image)
		if err != nil || got != tt.want {
			t.Errorf("%s image(%q) = %q, %v; want %q", tt.rt, tt.image, got, err, tt.want)
		}
	}
}

func TestSlurmTime(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, ""},
		{time.Millisecond, "0-00:00:01"},
		{90 * time.Second, "0-00:01:30"},
		{25*time.Hour + 61*time.Second, "1-01:01:01"},
		{10 * 24 * time.Hour, "10-00:00:00"},
	}
	for _, tt := range tests {
		if got := slurmTime(tt.d); got != tt.want {
			t.Errorf("slurmTime(%v) = %q; want %q", tt.d, got, tt.want)
		}
	}
}

package jobscript

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
)

func TestExecArgv(t *testing.T) {
	c := Container{Name: "main", Image: "/images/busybox", Command: []string{"sleep", "inf"}, EnvFile: "env/main",
		WorkingDir: "/work", Mounts: []Mount{{Source: "volumes/cfg", Target: "/cfg"}}}
	o := ExecOptions{JobID: "42", Host: "node1", JobDir: "/data/ns-uid"}
	head := []string{"srun", "--jobid=42", "--overlap", "--nodelist=node1", "--nodes=1", "--ntasks=1", "--quiet"}
	tail := func(env, dir string) []string {
		hosts := "/data/ns-uid/exec.hosts"
		if dir != "" {
			hosts = ""
		}
		return []string{"--", "/bin/sh", "-c", execScript, "sluice-exec", env, dir, hosts}
	}
	for _, tc := range []struct {
		name string
		rt   Runtime
		tty  bool
		want []string
	}{
		{"charliecloud", RuntimeCharliecloud, false, slices.Concat(head, []string{"--unbuffered"}, tail("/data/ns-uid/env/main", ""),
			[]string{"ch-run", "-b", "/data/ns-uid/volumes/cfg:/cfg", "--cd=/work", "/images/busybox", "--", "cat", "/etc/hosts"})},
		{"charliecloud tty", RuntimeCharliecloud, true, slices.Concat(head, []string{"--pty"}, tail("/data/ns-uid/env/main", ""),
			[]string{"ch-run", "-b", "/data/ns-uid/volumes/cfg:/cfg", "--cd=/work", "/images/busybox", "--", "cat", "/etc/hosts"})},
		{"apptainer", RuntimeApptainer, false, slices.Concat(head, []string{"--unbuffered"}, tail("/data/ns-uid/env/main", ""),
			[]string{"apptainer", "exec", "--env-file", "/data/ns-uid/env/main", "--bind", "/data/ns-uid/volumes/cfg:/cfg", "--pwd", "/work", "/images/busybox", "cat", "/etc/hosts"})},
		{"none", RuntimeNone, false, slices.Concat(head, []string{"--unbuffered"}, tail("/data/ns-uid/env/main", "/work"), []string{"cat", "/etc/hosts"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := c
			if tc.rt == RuntimeNone {
				cc.Mounts = nil
			}
			o := o
			o.TTY = tc.tty
			got, err := tc.rt.ExecArgv(cc, []string{"cat", "/etc/hosts"}, o)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("got %q, %v;\nwant %q", got, err, tc.want)
			}
		})
	}
	none := Container{Name: "main", Command: []string{"x"}}
	if got, _ := RuntimeNone.ExecArgv(none, []string{"pwd"}, o); got[len(got)-3] != "/data/ns-uid" {
		t.Errorf("got %q; want RuntimeNone to enter the job directory without a working directory", got)
	}
	for _, bad := range []struct {
		name string
		cmd  []string
		o    ExecOptions
	}{
		{"no command", nil, o},
		{"NUL in the command", []string{"a\x00b"}, o},
		{"job id", []string{"true"}, ExecOptions{JobID: "42;rm", Host: "node1", JobDir: "/d"}},
		{"no job id", []string{"true"}, ExecOptions{Host: "node1", JobDir: "/d"}},
		{"host", []string{"true"}, ExecOptions{JobID: "1", Host: "-oProxyCommand=x", JobDir: "/d"}},
	} {
		if got, err := RuntimeCharliecloud.ExecArgv(c, bad.cmd, bad.o); err == nil {
			t.Errorf("%s: got %q; want an error", bad.name, got)
		}
	}
}

func TestExecScriptPassesShellCheck(t *testing.T) {
	checkShell(t, []byte("#!/bin/sh\n"+execScript+"\n"))
}

// TestExecScriptRuns runs execScript under sh as srun would: the
// environment file is read, the directory entered, the command's exit
// code returned.
func TestExecScriptRuns(t *testing.T) {
	dir := t.TempDir()
	env := filepath.Join(dir, "env")
	if err := os.WriteFile(env, []byte("GREETING='hello world'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("/bin/sh", "-c", execScript, "sluice-exec", env, dir, "", "sh", "-c", `echo "$GREETING in $(pwd)"; exit 3`).Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("got %v; want exit code 3", err)
	}
	if got, want := strings.TrimSpace(string(out)), "hello world in "+dir; got != want {
		t.Errorf("got %q; want %q", got, want)
	}
	out, err = exec.Command("/bin/sh", "-c", execScript, "sluice-exec", "", "", filepath.Join(dir, "missing"), "echo", "plain").Output()
	if err != nil || strings.TrimSpace(string(out)) != "plain" {
		t.Errorf("got %q, %v without env file, directory or hosts copy; want plain", out, err)
	}

	// With a hosts copy recorded: ch-run gets -b, others APPTAINER_BIND.
	hosts, ref := writeExecHosts(t)
	out, err = exec.Command("/bin/sh", "-c", execScript, "sluice-exec", "", "", ref, argsProgram(t, "ch-run"), "/img", "--", "cat").Output()
	if want := "-b|" + hosts + ":/etc/hosts|/img|--|cat|"; err != nil || string(out) != want {
		t.Errorf("ch-run got %q, %v; want %q", out, err, want)
	}
	cmd := exec.Command("/bin/sh", "-c", execScript, "sluice-exec", "", "", ref, "sh", "-c", `printf %s "$APPTAINER_BIND"`)
	cmd.Env = append(os.Environ(), "SINGULARITY_BIND=/a:/b", "APPTAINER_BIND=")
	out, err = cmd.Output()
	if want := "/a:/b," + hosts + ":/etc/hosts"; err != nil || string(out) != want {
		t.Errorf("APPTAINER_BIND got %q, %v; want %q", out, err, want)
	}
}

// FuzzExecArgv: whatever kubectl sends as the command, ExecArgv refuses
// it or ends its command line with exactly it, after the fixed script.
func FuzzExecArgv(f *testing.F) {
	f.Add("cat", "/etc/hosts")
	f.Add("sh", "-c 'exit 3'")
	f.Add("a\x00b", "")
	f.Add("--", "-b /:/etc")
	f.Fuzz(func(t *testing.T, a, b string) {
		cmd := []string{a, b}
		c := Container{Name: "main", Image: "/img", Command: []string{"x"}}
		got, err := RuntimeCharliecloud.ExecArgv(c, cmd, ExecOptions{JobID: "1", Host: "node1", JobDir: "/d"})
		if err != nil {
			return
		}
		if !slices.Equal(got[len(got)-2:], cmd) || got[len(got)-3] != "--" || !slices.Contains(got, execScript) {
			t.Errorf("ExecArgv(%q) = %q", cmd, got)
		}
	})
}

// TestExecArgvApptainerOptions: exec runs apptainer as the job's command
// line does: the site's program, the site's options, then the pod's, in
// the same words as the batch script's.
func TestExecArgvApptainerOptions(t *testing.T) {
	c := Container{Name: "main", Image: "/images/busybox", Command: []string{"sleep", "inf"}, EnvFile: "env/main",
		Mounts: []Mount{{Source: "volumes/cfg", Target: "/cfg", ReadOnly: true}}}
	site := SiteOptions{RuntimePath: "/opt/apptainer/bin/apptainer", RuntimeOptions: []string{"--cleanenv", "--bind=/opt/site:/opt/site"}}
	podOpts := []string{"--nv", "--bind=/scratch:/scratch:ro"}
	o := ExecOptions{JobID: "42", Host: "node1", JobDir: "/data/ns-uid", Site: site, RuntimeOptions: podOpts}
	got, err := RuntimeApptainer.ExecArgv(c, []string{"cat", "/etc/hosts"}, o)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(got, execScript)
	if i < 0 {
		t.Fatalf("got %q; want the exec script", got)
	}
	want := []string{"/opt/apptainer/bin/apptainer", "exec", "--cleanenv", "--bind=/opt/site:/opt/site", "--nv", "--bind=/scratch:/scratch:ro",
		"--env-file", "/data/ns-uid/env/main", "--bind", "/data/ns-uid/volumes/cfg:/cfg:ro", "/images/busybox", "cat", "/etc/hosts"}
	if tail := got[i+5:]; !slices.Equal(tail, want) {
		t.Errorf("got %q;\nwant %q", tail, want)
	}

	// The batch script runs the container with the same words.
	job := &Job{RuntimeOptions: podOpts}
	d := newContainerData(job, &c, ScriptOptions{Runtime: RuntimeApptainer, JobDir: "/data/ns-uid", Site: site}, "")
	script := d.Argv[:len(d.Argv)-len(c.Command)]
	if exec := want[1 : len(want)-2]; !slices.Equal(script, exec) {
		t.Errorf("the job runs apptainer with %q; exec with %q", script, exec)
	}

	for _, bad := range []struct {
		name string
		rt   Runtime
		o    ExecOptions
	}{
		{"options under charliecloud", RuntimeCharliecloud, ExecOptions{JobID: "1", Host: "node1", JobDir: "/d", RuntimeOptions: []string{"--nv"}}},
		{"a refused option", RuntimeApptainer, ExecOptions{JobID: "1", Host: "node1", JobDir: "/d", RuntimeOptions: []string{"--net"}}},
		{"a bind over /etc/hosts", RuntimeApptainer, ExecOptions{JobID: "1", Host: "node1", JobDir: "/d", Site: SiteOptions{RuntimeOptions: []string{"--bind=/x:/etc"}}}},
		{"a word that is no option", RuntimeApptainer, ExecOptions{JobID: "1", Host: "node1", JobDir: "/d", RuntimeOptions: []string{"/other.sif"}}},
	} {
		if got, err := bad.rt.ExecArgv(c, []string{"true"}, bad.o); err == nil {
			t.Errorf("%s: got %q; want an error", bad.name, got)
		}
	}
}

// TestExecArgvEnroot: exec into a pod of the enroot golden case (site
// options, the pod's enroot mounts and options) runs enroot start with
// the same words as the batch script's container line, and the exec
// script binds the reverse tunnel's hosts copy right after start.
func TestExecArgvEnroot(t *testing.T) {
	pod := gpuPod()
	pod.Spec.Containers[0].Command = []string{"python3", "train.py"}
	pod.Annotations = map[string]string{
		AnnotationEnrootMounts:  "--mount /scratch/alice/data:/data:none:bind,ro /scratch/alice/out:/out",
		AnnotationEnrootOptions: `--rw -e "GREETING=it's me"`,
	}
	site := enrootSiteOptions()
	job, err := FromPod(t.Context(), pod, scripttest.NewSources(pod.Namespace), PodOptions{Runtime: RuntimeEnroot, Site: site})
	if err != nil {
		t.Fatalf("FromPod: %v", err)
	}
	dir := JobDir("/scratch/alice/.sluice", pod.Namespace, string(pod.UID))
	c := job.Containers[0]
	cmd := []string{"cat", "/etc/hosts"}
	got, err := RuntimeEnroot.ExecArgv(c, cmd, ExecOptions{JobID: "42", Host: "node1", JobDir: dir, Site: site, RuntimeOptions: job.RuntimeOptions})
	if err != nil {
		t.Fatalf("ExecArgv: %v", err)
	}
	i := slices.Index(got, execScript)
	if i < 0 {
		t.Fatalf("got %q; want the exec script", got)
	}
	pc := c
	pc.Command, pc.Args = cmd, nil
	line := newContainerData(job, &pc, ScriptOptions{Runtime: RuntimeEnroot, JobDir: dir, Site: site}, "")
	want := slices.Concat([]string{"/opt/enroot/bin/enroot", "start"}, line.Argv)
	if tail := got[i+5:]; !slices.Equal(tail, want) {
		t.Errorf("exec runs %q;\nthe job runs %q", tail, want)
	}
	for _, w := range []string{"--root", "--rw", "GREETING=it's me", "/scratch/alice/data:/data:none:bind,ro"} {
		if !slices.Contains(want, w) {
			t.Errorf("the container line %q lacks %q", want, w)
		}
	}

	// The exec script puts the hosts copy's mount between start and the
	// options, as the batch script's line does.
	hosts, ref := writeExecHosts(t)
	out, err := exec.Command("/bin/sh", "-c", execScript, "sluice-exec", "", "", ref, argsProgram(t, "enroot"), "start", "--root", "name", "cat").Output()
	if want := "start|--mount|" + hosts + ":/etc/hosts:none:x-create=file,bind|--root|name|cat|"; err != nil || string(out) != want {
		t.Errorf("enroot got %q, %v; want %q", out, err, want)
	}

	// Apptainer's options stay refused under enroot, and enroot's refused
	// options too.
	for _, bad := range [][]string{{"--nv"}, {"--conf", "/x"}, {"--mount", "/x:/etc"}} {
		if got, err := RuntimeEnroot.ExecArgv(c, cmd, ExecOptions{JobID: "42", Host: "node1", JobDir: dir, RuntimeOptions: bad}); err == nil {
			t.Errorf("options %q: got %q; want an error", bad, got)
		}
	}
}

// writeExecHosts writes a reverse tunnel's hosts copy and the file that
// names it (execHostsFile), as the job does, and gives both paths.
func writeExecHosts(t *testing.T) (hosts, ref string) {
	t.Helper()
	dir := t.TempDir()
	hosts, ref = filepath.Join(dir, "hosts.abc"), filepath.Join(dir, execHostsFile)
	if err := os.WriteFile(hosts, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ref, []byte(hosts+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return hosts, ref
}

// argsProgram writes a program called name that prints its arguments,
// each followed by '|', and gives its path.
func argsProgram(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\nprintf '%s|' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

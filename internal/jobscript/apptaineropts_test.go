package jobscript

import (
	"cmp"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
	"github.com/sluice-hpc/sluice/internal/site"
)

func TestApptainerOptions(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		src  optionSource
		want string
	}{
		{[]string{"--nv"}, optionsFromPod, "--nv"},
		{[]string{"--nv --no-eval", "--containall"}, optionsFromSite, "--nv --no-eval --containall"},
		{[]string{"-B /scratch:/scratch,/data:/in:ro --writable-tmpfs"}, optionsFromPod, "--bind=/scratch:/scratch,/data:/in:ro --writable-tmpfs"},
		{[]string{"--bind=/a"}, mountsFromPod, "--bind=/a"},
		{[]string{"-B/a:/b"}, mountsFromPod, "--bind=/a:/b"},
		{[]string{`--env "GREETING=hi there" -C`}, optionsFromPod, "--env=GREETING=hi there --containall"},
		{[]string{"--no-mount home,tmp -e"}, optionsFromPod, "--no-mount=home,tmp --cleanenv"},
		{[]string{"--overlay /o.img:ro --fakeroot"}, optionsFromPod, "--overlay=/o.img:ro --fakeroot"},
		{[]string{"--home /scratch/alice:/home/alice -S /tmp,/var/tmp"}, optionsFromPod, "--home=/scratch/alice:/home/alice --scratch=/tmp,/var/tmp"},
		{[]string{""}, optionsFromPod, ""},
	} {
		got, err := checkApptainerOptions(tc.in, tc.src)
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("checkApptainerOptions(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestApptainerOptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		in   string
		src  optionSource
		want string
	}{
		{"--net", optionsFromPod, "--net is refused: a network namespace cuts the containers off"},
		{"-n", optionsFromPod, "--net is refused"},
		{"--network=bridge", optionsFromPod, "--network is refused"},
		{"--network-args portmap=80:80", optionsFromPod, "--network-args is refused"},
		{"--add-caps CAP_NET_ADMIN", optionsFromPod, "--add-caps is refused: it gives the containers privileges"},
		{"--allow-setuid", optionsFromPod, "--allow-setuid is refused"},
		{"--keep-privs", optionsFromPod, "--keep-privs is refused"},
		{"--security seccomp:unconfined", optionsFromPod, "--security is refused"},
		{"--env-file /x", optionsFromPod, "--env-file is refused: sluice gives the containers the pod's environment"},
		{"--pwd /x", optionsFromPod, "--pwd is refused: the container's workingDir sets it"},
		{"--mount type=bind,src=/a,dst=/b", optionsFromPod, "--mount is refused"},
		{"--bind /x:/etc/hosts", optionsFromPod, "it covers /etc/hosts, where the reverse tunnel binds its hosts file"},
		{"--bind /etc", optionsFromPod, "it covers /etc/hosts"},
		{"-B /x:/", optionsFromPod, "it covers /etc/hosts"},
		{"--home /scratch/alice:/etc", optionsFromPod, "--home \"/scratch/alice:/etc\": it covers /etc/hosts"},
		{"-H /etc", optionsFromPod, "it covers /etc/hosts"},
		{"--scratch /tmp,/etc", optionsFromPod, "--scratch \"/tmp,/etc\": it covers /etc/hosts"},
		{"-S etc", optionsFromPod, "it covers /etc/hosts"},
		{"-B /a:/b:rx", optionsFromPod, `the mode is ro or rw, got "rx"`},
		{"-B a:/b", optionsFromPod, `"a" is not a clean absolute path`},
		{"-B /a/../b", optionsFromPod, `is not a clean absolute path`},
		{"-B /a:/b:ro:x", optionsFromPod, "want src[:dst[:ro|rw]]"},
		{"-B /a,", optionsFromPod, `"" is not a clean absolute path`},
		{"--bind", optionsFromPod, "--bind needs a value"},
		{"--bind --nv", optionsFromPod, "--bind needs a value"},
		{"--nv=1", optionsFromPod, "--nv takes no value"},
		{"--frobnicate", optionsFromPod, "sluice does not know the apptainer option --frobnicate"},
		{"-Z", optionsFromPod, "sluice does not know the apptainer option -Z"},
		{"docker://evil", optionsFromPod, "is not an apptainer option (a value goes right after its option); it would be read as the image"},
		{"--nv /x.sif", optionsFromPod, `"/x.sif" is not an apptainer option`},
		{"--nv", mountsFromPod, "slurm-job.vk.io/singularity-mounts takes binds only"},
		{"--bind '/a b'", optionsFromPod, "is not a clean absolute path without spaces"},
		{"--env 'A=\x01'", optionsFromPod, "control characters are not allowed"},
		{"--nv\r\n", optionsFromPod, "NUL and CR characters are not allowed"},
		{"--nv 'x", optionsFromPod, "the quote ' is not closed"},
	} {
		if _, err := checkApptainerOptions([]string{tc.in}, tc.src); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("checkApptainerOptions(%q) = %v; want an error with %q", tc.in, err, tc.want)
		}
	}
}

// Every accepted option reads back the same, and every bind list that
// parses writes back as it was read.
func FuzzApptainerOptions(f *testing.F) {
	for _, s := range []string{"--nv", "-B /a:/b:ro,/c", "--bind=/x:/etc/hosts", "--env 'A=b c' -C", "--net", "x", "-B/a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := checkApptainerOptions([]string{in}, optionsFromPod)
		if err != nil {
			return
		}
		again, err := checkApptainerOptions([]string{site.Join(got)}, optionsFromPod)
		if err != nil || !slices.Equal(got, again) {
			t.Fatalf("checkApptainerOptions(%q) = %q, which reads back as %q, %v", in, got, again, err)
		}
		for _, o := range got {
			name, value, _ := strings.Cut(strings.TrimPrefix(o, "--"), "=")
			if !strings.HasPrefix(o, "--") || apptainerOptions[name].refused != "" {
				t.Fatalf("checkApptainerOptions(%q) accepted %q", in, o)
			}
			if !apptainerOptions[name].bind {
				continue
			}
			binds, err := parseBinds(value)
			if err != nil {
				t.Fatalf("checkApptainerOptions(%q) accepted %q: %v", in, o, err)
			}
			for _, b := range binds {
				if dst := cmp.Or(b.Dst, b.Src); dst == "/" || dst == "/etc" || dst == "/etc/hosts" {
					t.Fatalf("checkApptainerOptions(%q) accepted a bind over /etc/hosts: %q", in, o)
				}
			}
		}
	})
}

func FuzzParseBinds(f *testing.F) {
	for _, s := range []string{"/a", "/a:/b", "/a:/b:ro,/c:/d:rw", "/x:/etc", "a:b", "/a:/b:", ",", "/a::ro"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		binds, err := parseBinds(list)
		if err != nil {
			return
		}
		var parts []string
		for _, b := range binds {
			dst := b.Dst
			if dst == "" {
				dst = b.Src
			}
			if dst == "/" || dst == "/etc" || dst == "/etc/hosts" || !strings.HasPrefix(b.Src, "/") || hasControl(b.String()) {
				t.Fatalf("parseBinds(%q) accepted %+v", list, b)
			}
			parts = append(parts, b.String())
		}
		if back := strings.Join(parts, ","); back != list {
			t.Fatalf("parseBinds(%q) writes back as %q", list, back)
		}
	})
}

// The pod's apptainer annotations reach the command line after the site's
// options; under Charliecloud they give a Warning instead; what they may not
// do refuses the pod, naming the annotation.
func TestFromPodRuntimeAnnotations(t *testing.T) {
	ctx := context.Background()
	site := SiteOptions{RuntimeOptions: []string{"--no-eval"}, ImagePrefix: "docker://"}
	pod := scripttest.SimplePod("python:3.12")
	pod.Annotations = map[string]string{
		AnnotationSingularityOptions: "--nv --containall",
		AnnotationSingularityMounts:  "--bind /scratch/alice:/work",
		AnnotationMPIFlags:           "--bind-to core --map-by 'ppr:1:node'",
		AnnotationImageRoot:          "/cvmfs/unpacked.cern.ch/registry.hub.docker.com/library/",
	}
	job, err := FromPod(ctx, pod, scripttest.NewSources(pod.Namespace), PodOptions{Runtime: RuntimeApptainer, Site: site})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(job.RuntimeOptions, " "); got != "--bind=/scratch/alice:/work --nv --containall" {
		t.Errorf("got runtime options %q", got)
	}
	if !job.MPI || strings.Join(job.MPIFlags, "|") != "--bind-to|core|--map-by|ppr:1:node" {
		t.Errorf("got MPI %v %q", job.MPI, job.MPIFlags)
	}
	if got := job.Containers[0].Image; got != "/cvmfs/unpacked.cern.ch/registry.hub.docker.com/library/python:3.12" {
		t.Errorf("got image %q; want the pod's image root, not the site's prefix", got)
	}
	script, err := Script(job, ScriptOptions{JobDir: "/j", Runtime: RuntimeApptainer, Site: site})
	if err != nil {
		t.Fatal(err)
	}
	want := `"$sluice_mpiexec" -np "${SLURM_NTASKS:-1}" --bind-to core --map-by ppr:1:node "$sluice_runtime" run --no-eval '--bind=/scratch/alice:/work' --nv --containall --env-file /j/env/hello /cvmfs/`
	if !strings.Contains(string(script), want) {
		t.Errorf("want %s in\n%s", want, script)
	}

	pod.Annotations[AnnotationMPIFlags] = "true"
	ch := SiteOptions{}
	pod.Spec.Containers[0].Command = []string{"true"}
	job, err = FromPod(ctx, pod, scripttest.NewSources(pod.Namespace), PodOptions{Runtime: RuntimeCharliecloud, Site: ch})
	if err != nil {
		t.Fatal(err)
	}
	if job.MPI || len(job.RuntimeOptions) != 0 {
		t.Errorf("charliecloud, mpi-flags true: got MPI %v options %q; want neither", job.MPI, job.RuntimeOptions)
	}
	var reasons []string
	for _, w := range job.Warnings {
		reasons = append(reasons, w.Message)
	}
	if len(reasons) != 2 || !strings.Contains(reasons[0], AnnotationSingularityMounts+": the site's runtime is charliecloud") {
		t.Errorf("got warnings %q; want the two apptainer annotations", reasons)
	}

	for name, value := range map[string]string{
		AnnotationSingularityOptions: "--network=host",
		AnnotationSingularityMounts:  "--nv",
		AnnotationMPIFlags:           "'unclosed",
		AnnotationImageRoot:          "docker://$(id)/",
	} {
		p := scripttest.SimplePod("busybox")
		p.Annotations = map[string]string{name: value}
		_, err := FromPod(ctx, p, scripttest.NewSources(p.Namespace), PodOptions{Runtime: RuntimeApptainer})
		var perr *PodError
		if !errors.As(err, &perr) || perr.Field != "metadata.annotations["+name+"]" {
			t.Errorf("%s: %q: got %v; want a PodError naming the annotation", name, value, err)
		}
	}
}

// A job under mpiexec runs each container through it, with -np
// $SLURM_NTASKS and the pod's flags; a fake mpiexec on PATH that runs its
// command as many times stands for it here.
func TestScriptRunsUnderMPI(t *testing.T) {
	bin := t.TempDir()
	fake := "#!/bin/sh\n[ \"$1\" = -np ] || exit 90\nn=$2 flag=$3\nshift 3\necho \"mpiexec $n $flag\"\ni=0\nwhile [ \"$i\" -lt \"$n\" ]; do \"$@\" || exit; i=$((i + 1)); done\n"
	if err := os.WriteFile(filepath.Join(bin, "mpiexec"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("SLURM_NTASKS", "2")
	pod := scripttest.SimplePod("ignored")
	pod.Spec.Containers[0].Command = []string{"sh", "-c", "echo task"}
	pod.Spec.Containers[0].Args = nil
	pod.Annotations = map[string]string{AnnotationMPIFlags: "--tag-output"}
	job, err := FromPod(context.Background(), pod, scripttest.NewSources(pod.Namespace), PodOptions{Runtime: RuntimeNone})
	if err != nil {
		t.Fatal(err)
	}
	dir := runJob(t, "sh", job)
	wantFile(t, dir, JobExitFile, "0\n")
	wantLog(t, dir, "hello", "mpiexec 2 --tag-output", "task", "task")
}

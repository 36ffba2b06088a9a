package jobscript

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
	corev1 "k8s.io/api/core/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenCases are pods rendered for each runtime. Every one is compared with
// testdata/golden/<name>.sh (the script) and <name>.files (the files written
// beside it), and checked with sh -n, bash -n and shellcheck.
var goldenCases = []struct {
	name    string
	runtime Runtime
	pod     func() *corev1.Pod
	site    SiteOptions // interLink's plugin keys; zero for none
}{
	{"apptainer-full", RuntimeApptainer, func() *corev1.Pod {
		return fullPod([3]string{"busybox:1.36", "docker://python:3.12-slim", "/shared/images/logger.sif"})
	}, SiteOptions{}},
	{"singularity-full", RuntimeSingularity, func() *corev1.Pod {
		return fullPod([3]string{"oras://registry.example.org/tools/fetch:1", "library://org/ml/train:2", "/shared/sandbox/logger"})
	}, SiteOptions{}},
	{"charliecloud-full", RuntimeCharliecloud, func() *corev1.Pod {
		return fullPod([3]string{"/shared/ch/busybox", "/shared/ch/python", "example.com:5050/logger"})
	}, SiteOptions{}},
	{"enroot-full", RuntimeEnroot, func() *corev1.Pod {
		return withoutMultiline(fullPod([3]string{"/shared/enroot/busybox.sqsh", "nvcr.io/nvidia/pytorch:24.01-py3", "docker://ubuntu:24.04"}))
	}, SiteOptions{}},
	{"enroot-site", RuntimeEnroot, func() *corev1.Pod {
		p := gpuPod()
		p.Spec.Containers[0].Command = []string{"python3", "train.py"}
		p.Annotations = map[string]string{
			AnnotationEnrootMounts:  "--mount /scratch/alice/data:/data:none:bind,ro /scratch/alice/out:/out",
			AnnotationEnrootOptions: `--rw -e "GREETING=it's me"`,
			AnnotationMPIFlags:      "--bind-to core",
			AnnotationFlags:         "-p gpu -t 10",
		}
		return p
	}, enrootSiteOptions()},
	{"none-full", RuntimeNone, func() *corev1.Pod { return withoutVolumes(fullPod([3]string{"ignored", "ignored", "ignored"})) }, SiteOptions{}},
	{"apptainer-default-command", RuntimeApptainer, func() *corev1.Pod { return scripttest.SimplePod("ghcr.io/org/hello:latest") }, SiteOptions{}},
	{"apptainer-long-names", RuntimeApptainer, longPod, SiteOptions{}},
	{"charliecloud-long-names", RuntimeCharliecloud, longPod, SiteOptions{}},
	{"apptainer-site", RuntimeApptainer, gpuPod, testSiteOptions()},
	{"apptainer-annotations", RuntimeApptainer, func() *corev1.Pod {
		p := gpuPod()
		p.Annotations = map[string]string{
			AnnotationFlavor:             "high-io",
			AnnotationSingularityMounts:  "-B /scratch/alice/data:/data:ro,/scratch/alice/out:/out",
			AnnotationSingularityOptions: `--nv --env "GREETING=it's me" --writable-tmpfs`,
			AnnotationMPIFlags:           "--bind-to core --map-by 'ppr:$(x):node'",
			AnnotationImageRoot:          "oras://registry.example.org/",
			AnnotationFlags:              "-p gpu -t 10",
		}
		return p
	}, testSiteOptions()},
	{"none-mpi", RuntimeNone, func() *corev1.Pod {
		p := scripttest.SimplePod("ignored")
		p.Spec.Containers[0].Command = []string{"./solver"}
		p.Annotations = map[string]string{AnnotationMPIFlags: "-x LD_LIBRARY_PATH"}
		return p
	}, SiteOptions{}},
	{"charliecloud-site", RuntimeCharliecloud, func() *corev1.Pod {
		p := scripttest.SimplePod("busybox")
		p.Spec.Containers[0].Command = []string{"echo"}
		p.Annotations = map[string]string{AnnotationFlavor: "default"}
		return p
	}, SiteOptions{Flavors: testSiteOptions().Flavors, CommandPrefix: "export X=1", ImagePrefix: "/shared/ch/", Shell: "/bin/bash"}},
	{"apptainer-probes", RuntimeApptainer, allProbesPod, SiteOptions{Probes: true}},
	{"charliecloud-probes", RuntimeCharliecloud, allProbesPod, SiteOptions{Probes: true}},
	{"enroot-probes", RuntimeEnroot, allProbesPod, SiteOptions{Probes: true}},
	{"none-probes", RuntimeNone, allProbesPod, SiteOptions{Probes: true}},
}

// goldenRelay is the relay binary's path on the site in golden scripts.
const goldenRelay = "/scratch/alice/.sluice/.bin/sluice-relay-0123456789abcdef"

func TestGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			pod := tc.pod()
			job, err := FromPod(context.Background(), pod, scripttest.NewSources(pod.Namespace), PodOptions{Runtime: tc.runtime, Site: tc.site})
			if err != nil {
				t.Fatalf("FromPod: %v", err)
			}
			if job.ChecksOwners() {
				job.Relay = goldenRelay
			}
			dir := JobDir("/scratch/alice/.sluice", pod.Namespace, string(pod.UID))
			script, err := Script(job, ScriptOptions{JobDir: dir, Runtime: tc.runtime, Site: tc.site})
			if err != nil {
				t.Fatalf("Script: %v", err)
			}
			checkShell(t, script)
			compareGolden(t, tc.name+".sh", script)
			compareGolden(t, tc.name+".files", describeFiles(job))
		})
	}
}

// describeFiles lists a job's files and directories for review: path, mode,
// and the content quoted.
func describeFiles(job *Job) []byte {
	var b bytes.Buffer
	for _, d := range job.Dirs {
		fmt.Fprintf(&b, "dir  %s/\n", d)
	}
	for _, f := range job.Files {
		fmt.Fprintf(&b, "file %s %04o %s\n", f.Path, f.Mode.Perm(), strconv.Quote(string(f.Data)))
	}
	return b.Bytes()
}

func compareGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGolden -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the rendered output (go test -run TestGolden -update rewrites it):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

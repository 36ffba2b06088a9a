package annotations

import (
	"maps"
	"reflect"
	"strings"
	"testing"
)

func TestCurrent(t *testing.T) {
	a := map[string]string{
		"slurm-job.knoc.io/flags":      "--job-name=x -p debug",
		"slurm-job.knoc.io/mpi-flags":  "--bind-to core",
		"slurm-job.vk.io/mpi-flags":    "true",
		"slurm-job.knoc.io/image-root": "/cvmfs/",
		"slurm-job.knoc.io/nfs-mode":   "x",
		"slurm-job.knoc.io":            "no slash: not under the prefix",
		"app":                          "y",
	}
	was := maps.Clone(a)
	cur, legacy := Current(a)
	if !maps.Equal(a, was) {
		t.Errorf("Current changed its argument: %v", a)
	}
	want := map[string]string{
		Flags:                      "--job-name=x -p debug",
		MPIFlags:                   "true",
		ImageRoot:                  "/cvmfs/",
		"slurm-job.vk.io/nfs-mode": "x",
		"slurm-job.knoc.io":        "no slash: not under the prefix",
		"app":                      "y",
	}
	if !maps.Equal(cur, want) {
		t.Errorf("Current = %v; want %v", cur, want)
	}
	wantLegacy := []Legacy{
		{Key: "slurm-job.knoc.io/flags", Name: Flags},
		{Key: "slurm-job.knoc.io/image-root", Name: ImageRoot},
		{Key: "slurm-job.knoc.io/mpi-flags", Name: MPIFlags, Ignored: true},
		{Key: "slurm-job.knoc.io/nfs-mode", Name: "slurm-job.vk.io/nfs-mode"},
	}
	if !reflect.DeepEqual(legacy, wantLegacy) {
		t.Errorf("legacy = %+v; want %+v", legacy, wantLegacy)
	}
	if got := legacy[0].Message(); got != "slurm-job.knoc.io/flags is read as slurm-job.vk.io/flags: slurm-job.knoc.io/ is the legacy prefix of interLink's Slurm plugin, which reads slurm-job.vk.io/ only: write slurm-job.vk.io/flags" {
		t.Errorf("message %q", got)
	}
	if got := legacy[2].Message(); !strings.HasPrefix(got, "slurm-job.knoc.io/mpi-flags is ignored: the pod also sets slurm-job.vk.io/mpi-flags, which is used") {
		t.Errorf("message %q", got)
	}
	plain := map[string]string{Flags: "-p gpu"}
	if cur, legacy := Current(plain); legacy != nil || !maps.Equal(cur, plain) {
		t.Errorf("Current(%v) = %v, %v; want it unchanged, no legacy", plain, cur, legacy)
	}
}

// Legacy annotations are warned of first, then what sluice does not
// implement under their new names; legacy annotations freeze with the
// others (Prefixed).
func TestWarningsOfLegacyAnnotations(t *testing.T) {
	got := Warnings(map[string]string{
		"slurm-job.knoc.io/flags":    "-p debug",
		"slurm-job.knoc.io/nfs-mode": "x",
		"slurm-job.knoc.io/made-up":  "x",
		"slurm-job.knoc.io/flavor":   "gpu",
		Flavor:                       "cpu",
	})
	want := []struct{ name, reason, says string }{
		{"slurm-job.knoc.io/flags", EventLegacyPrefix, "is read as slurm-job.vk.io/flags"},
		{"slurm-job.knoc.io/flavor", EventLegacyPrefix, "is ignored: the pod also sets slurm-job.vk.io/flavor"},
		{"slurm-job.knoc.io/made-up", EventLegacyPrefix, "is read as slurm-job.vk.io/made-up"},
		{"slurm-job.knoc.io/nfs-mode", EventLegacyPrefix, "is read as slurm-job.vk.io/nfs-mode"},
		{"slurm-job.vk.io/made-up", EventNotImplemented, "sluice does not know this annotation"},
		{"slurm-job.vk.io/nfs-mode", EventNotImplemented, "sluice mounts no NFS persistent volume"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d warnings %+v; want %d", len(got), got, len(want))
	}
	for i, w := range want {
		if got[i].Annotation != w.name || got[i].Reason != w.reason || !strings.Contains(got[i].Message, w.says) {
			t.Errorf("warning %d = %+v; want %s %s saying %q", i, got[i], w.name, w.reason, w.says)
		}
	}
	if !Prefixed("slurm-job.knoc.io/flags") {
		t.Error("slurm-job.knoc.io/flags is not Prefixed: it would not freeze after submission")
	}
}

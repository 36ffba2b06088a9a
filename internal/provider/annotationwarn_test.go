package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/jobscript"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Each annotation of interLink's that sluice does not implement (or that
// the site's runtime cannot apply: enroot's under Charliecloud) gives one
// Warning Event naming it and saying what sluice does instead, and the pod
// runs; implemented (shadow-same-ns) and foreign annotations give none; CreatePod called
// again for the same pod, or for a pod of the node before a restart, tells
// nothing again.
func TestUnimplementedAnnotationsAreWarnedOnce(t *testing.T) {
	pod := testPod("gpu")
	pod.Annotations = map[string]string{
		jobscript.AnnotationFlags:        "-p gpu --gres=gpu:1",
		"slurm-job.vk.io/enroot-options": "--rw",
		"interlink.eu/shadow-same-ns":    "true",
		"interlink.eu/made-up":           "x",
		"example.com/other":              "x",
	}
	adopted := testPod("adopted")
	adopted.Annotations = map[string]string{"slurm-job.vk.io/mpi-flags": "--bind-to core"}
	adopted.Finalizers = []string{Finalizer}
	adopted.Status.HostIP = "10.0.0.9"
	now := metav1.Now()
	adopted.Status.StartTime = &now
	h := newHarness(t, nil, pod, adopted)
	ctx := context.Background()
	for range 2 {
		if err := h.p.CreatePod(ctx, pod); err != nil {
			t.Fatalf("CreatePod: %v", err)
		}
	}
	if err := h.p.CreatePod(ctx, adopted); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("Normal Submitted submitted as Slurm job")
	h.waitEvent("Normal Adopted adopted Slurm job")
	want := map[string]string{
		"slurm-job.vk.io/enroot-options": "the site's runtime is charliecloud, not enroot: the containers run without these options",
		"interlink.eu/made-up":           "sluice does not know this annotation; it has no effect here",
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	got := map[string]int{}
	for _, e := range h.events {
		rest, ok := strings.CutPrefix(e, "Warning "+annotations.EventNotImplemented+" ")
		if !ok {
			continue
		}
		name, msg, _ := strings.Cut(rest, ": ")
		if !strings.Contains(msg, want[name]) || want[name] == "" {
			t.Errorf("unexpected warning %q", e)
		}
		got[name]++
	}
	for name := range want {
		if got[name] != 1 {
			t.Errorf("%s warned %d times; want once", name, got[name])
		}
	}
}

// A pod with many unknown annotations gets maxAnnotationWarnings Events
// and one that counts the rest, not one Event each.
func TestAnnotationWarningsAreBounded(t *testing.T) {
	pod := testPod("many")
	pod.Annotations = map[string]string{}
	for i := range maxAnnotationWarnings + 5 {
		pod.Annotations[fmt.Sprintf("interlink.eu/x%02d", i)] = "y"
	}
	h := newHarness(t, nil, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("Normal Submitted submitted as Slurm job")
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, e := range h.events {
		if strings.HasPrefix(e, "Warning "+annotations.EventNotImplemented+" ") {
			n++
		}
	}
	last := fmt.Sprintf("5 more annotations under slurm-job.vk.io/, interlink.eu/, interlink.virtual-kubelet.io/, slurm-job.knoc.io/ are not implemented or are written under the legacy prefix, from interlink.eu/x%02d on", maxAnnotationWarnings)
	if n != maxAnnotationWarnings+1 || !slices.ContainsFunc(h.events, func(e string) bool { return strings.HasSuffix(e, last) }) {
		t.Errorf("got %d warnings in %q; want %d and one saying %q", n, h.events, maxAnnotationWarnings+1, last)
	}
}

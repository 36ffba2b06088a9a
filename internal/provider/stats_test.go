package provider

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
)

// The stats endpoints report the pods whose job runs, from one read of
// their usage; a pending pod's job is not asked about.
func TestStatsOfRunningPods(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	f := &fakeUsage{now: clk.Now, cpu: map[slurm.JobID]time.Duration{"101": 90 * time.Second, "102": 90 * time.Second}}
	running, pending := testPod("busy"), testPod("waits")
	h := newHarness(t, func(c *Config) { c.Usage = f }, running, pending)
	h.p.usageSampler = newUsageSampler(f, 10*time.Second, clk.Now) // the test's clock
	ctx := context.Background()
	for _, pod := range []*corev1.Pod{running, pending} {
		if err := h.p.CreatePod(ctx, pod); err != nil {
			t.Fatalf("CreatePod: %v", err)
		}
	}
	h.waitFor("both jobs submitted", func() bool { n, _, _, _ := h.jobs.counts(); return n == 2 })
	h.jobs.setState("uid-busy", slurm.Status{State: slurm.StateRunning, BatchHost: "node1",
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true}}})
	h.waitPhase(running, corev1.PodRunning)

	s, err := h.p.StatsSummary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if f.callCount() != 1 || len(f.calls[0]) != 1 {
		t.Fatalf("Usage calls %v; want one, for the running pod's job alone", f.calls)
	}
	if len(s.Pods) != 1 || s.Pods[0].PodRef.Name != "busy" || len(s.Pods[0].Containers) != 1 {
		t.Fatalf("summary pods %+v; want busy alone, with its container", s.Pods)
	}
	ps := s.Pods[0]
	if c := ps.Containers[0]; c.Name != "main" || *c.CPU.UsageCoreNanoSeconds != uint64(90*time.Second) ||
		*c.Memory.WorkingSetBytes != 1<<20 || c.CPU.UsageNanoCores != nil {
		t.Errorf("container stats %+v; want main, 90 s of CPU, 1 MiB, no rate yet", c)
	}
	if s.Node.NodeName != "hpc" || *s.Node.CPU.UsageCoreNanoSeconds != uint64(90*time.Second) || *s.Node.Memory.WorkingSetBytes != 1<<20 {
		t.Errorf("node stats %+v; want the sum of its jobs'", s.Node)
	}

	f.set(f.calls[0][0], 95*time.Second)
	clk.add(10 * time.Second)
	fams, err := h.p.MetricsResource(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	enc := expfmt.NewEncoder(&text, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range fams {
		if err := enc.Encode(mf); err != nil {
			t.Fatalf("encode %s: %v", mf.GetName(), err)
		}
	}
	stamp := " 1800000010000\n"
	for _, want := range []string{
		"node_cpu_usage_seconds_total 95" + stamp,
		"node_memory_working_set_bytes 1.048576e+06" + stamp,
		`container_cpu_usage_seconds_total{container="main",namespace="ns",pod="busy"} 95` + stamp,
		`container_memory_working_set_bytes{container="main",namespace="ns",pod="busy"} 1.048576e+06` + stamp,
		`pod_cpu_usage_seconds_total{namespace="ns",pod="busy"} 95` + stamp,
		"scrape_error 0\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("/metrics/resource lacks %q:\n%s", want, text.String())
		}
	}
	if strings.Contains(text.String(), "waits") {
		t.Errorf("/metrics/resource names the pending pod:\n%s", text.String())
	}
	s, err = h.p.StatsSummary(ctx) // within the interval: no new read
	if err != nil || f.callCount() != 2 {
		t.Fatalf("%d reads, %v; want the last read's figures", f.callCount(), err)
	}
	if r := s.Pods[0].CPU.UsageNanoCores; r == nil || *r != 500_000_000 {
		t.Errorf("pod CPU rate %v; want half a core (5 s in 10 s)", r)
	}
}

func TestStatsWithoutUsageReader(t *testing.T) {
	h := newHarness(t, nil)
	if _, err := h.p.StatsSummary(context.Background()); err == nil {
		t.Error("StatsSummary without a usage reader gave no error")
	}
	if _, err := h.p.MetricsResource(context.Background()); err == nil {
		t.Error("MetricsResource without a usage reader gave no error")
	}
}

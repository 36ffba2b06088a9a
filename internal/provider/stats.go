package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-hpc/sluice/internal/slurm"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// The kubelet's /stats/summary and /metrics/resource (the endpoint
// metrics-server scrapes) answer from Slurm's accounting of the node's
// running jobs. A job's batch step runs all of its pod's containers, and
// Slurm accounts for the step as a whole: the pod's usage is reported as
// its first container's. The node's usage is the sum of its jobs'.

// errNoUsage: the provider was given no UsageReader.
var errNoUsage = errors.New("stats: no usage reader")

// runningPod is what the stats of a pod with a running job are built from.
type runningPod struct {
	ref       statsv1alpha1.PodReference
	job       slurm.JobID
	start     metav1.Time
	container string
	// containerStart is when the first container started running, else
	// the pod's start.
	containerStart metav1.Time
}

// runningPods lists the pods whose job runs, as last polled.
func (p *Provider) runningPods() []runningPod {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []runningPod
	for _, st := range p.pods {
		pod := st.pod
		if !st.submitted || st.final || st.last.State != slurm.StateRunning || len(pod.Spec.Containers) == 0 {
			continue
		}
		rp := runningPod{
			ref: statsv1alpha1.PodReference{Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID)},
			job: st.ref.JobID, container: pod.Spec.Containers[0].Name,
		}
		if pod.Status.StartTime != nil {
			rp.start = *pod.Status.StartTime
		}
		rp.containerStart = rp.start
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Name == rp.container && cs.State.Running != nil {
				rp.containerStart = cs.State.Running.StartedAt
			}
		}
		out = append(out, rp)
	}
	return out
}

// usage reads the usage of the running pods' jobs (see usageSampler).
func (p *Provider) usage(ctx context.Context) ([]runningPod, map[slurm.JobID]jobUsage, nodeUsage, error) {
	if p.usageSampler == nil {
		return nil, nil, nodeUsage{}, errNoUsage
	}
	pods := p.runningPods()
	jobs := make([]slurm.JobID, len(pods))
	for i, rp := range pods {
		jobs[i] = rp.job
	}
	got, node, err := p.usageSampler.sample(ctx, jobs)
	if err != nil {
		return nil, nil, nodeUsage{}, fmt.Errorf("stats: %w", err)
	}
	return pods, got, node, nil
}

// StatsSummary is the node's /stats/summary: the node and each pod whose
// job Slurm reports, with CPU time, CPU rate (once two reads saw the job)
// and resident memory.
func (p *Provider) StatsSummary(ctx context.Context) (*statsv1alpha1.Summary, error) {
	pods, got, node, err := p.usage(ctx)
	if err != nil {
		return nil, err
	}
	at := metav1.NewTime(node.Time)
	s := &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{
		NodeName:  p.cfg.NodeName,
		StartTime: metav1.NewTime(node.Start),
		CPU:       cpuStats(at, node.CPU, &node.NanoCores),
		Memory:    memoryStats(at, node.Memory),
	}}
	for _, rp := range pods {
		u, ok := got[rp.job]
		if !ok {
			continue
		}
		t := metav1.NewTime(u.Time)
		cpu, mem := cpuStats(t, u.CPU, u.NanoCores), memoryStats(t, u.Memory)
		s.Pods = append(s.Pods, statsv1alpha1.PodStats{
			PodRef: rp.ref, StartTime: rp.start, CPU: cpu, Memory: mem,
			Containers: []statsv1alpha1.ContainerStats{{Name: rp.container, StartTime: rp.containerStart, CPU: cpu, Memory: mem}},
		})
	}
	return s, nil
}

func cpuStats(t metav1.Time, used time.Duration, nanoCores *uint64) *statsv1alpha1.CPUStats {
	total := uint64(used.Nanoseconds())
	return &statsv1alpha1.CPUStats{Time: t, UsageNanoCores: nanoCores, UsageCoreNanoSeconds: &total}
}

// memoryStats: Slurm's resident set size stands for the working set (the
// page cache of the job's files is not the job's to count).
func memoryStats(t metav1.Time, rss int64) *statsv1alpha1.MemoryStats {
	b := uint64(max(rss, 0))
	return &statsv1alpha1.MemoryStats{Time: t, WorkingSetBytes: &b, RSSBytes: &b, UsageBytes: &b}
}

package provider

import (
	"context"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// MetricsResource is the node's /metrics/resource, the kubelet's resource
// metrics that metrics-server scrapes: the CPU time (a counter, from which
// metrics-server takes the rate between two scrapes) and working set of
// the node and of each pod whose job Slurm reports, stamped with the time
// they were read.
func (p *Provider) MetricsResource(ctx context.Context) ([]*dto.MetricFamily, error) {
	pods, got, node, err := p.usage(ctx)
	if err != nil {
		return nil, err
	}
	nodeCPU := family("node_cpu_usage_seconds_total", "Cumulative cpu time consumed by the node in core-seconds", dto.MetricType_COUNTER)
	nodeMem := family("node_memory_working_set_bytes", "Current working set of the node in bytes", dto.MetricType_GAUGE)
	cCPU := family("container_cpu_usage_seconds_total", "Cumulative cpu time consumed by the container in core-seconds", dto.MetricType_COUNTER)
	cMem := family("container_memory_working_set_bytes", "Current working set of the container in bytes", dto.MetricType_GAUGE)
	cStart := family("container_start_time_seconds", "Start time of the container since unix epoch in seconds", dto.MetricType_GAUGE)
	pCPU := family("pod_cpu_usage_seconds_total", "Cumulative cpu time consumed by the pod in core-seconds", dto.MetricType_COUNTER)
	pMem := family("pod_memory_working_set_bytes", "Current working set of the pod in bytes", dto.MetricType_GAUGE)
	scrapeErr := family("scrape_error", "1 if there was an error while getting container metrics, 0 otherwise", dto.MetricType_GAUGE)

	add(nodeCPU, nil, node.CPU.Seconds(), node.Time)
	add(nodeMem, nil, float64(node.Memory), node.Time)
	scrapeErr.Metric = append(scrapeErr.Metric, &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(0)}}) // errors are answered as such
	for _, rp := range pods {
		u, ok := got[rp.job]
		if !ok {
			continue
		}
		podLabels := labels("namespace", rp.ref.Namespace, "pod", rp.ref.Name)
		cLabels := labels("container", rp.container, "namespace", rp.ref.Namespace, "pod", rp.ref.Name)
		add(cCPU, cLabels, u.CPU.Seconds(), u.Time)
		add(cMem, cLabels, float64(u.Memory), u.Time)
		if !rp.containerStart.IsZero() {
			add(cStart, cLabels, float64(rp.containerStart.UnixNano())/1e9, u.Time)
		}
		add(pCPU, podLabels, u.CPU.Seconds(), u.Time)
		add(pMem, podLabels, float64(u.Memory), u.Time)
	}
	all := []*dto.MetricFamily{nodeCPU, nodeMem, cCPU, cMem, cStart, pCPU, pMem, scrapeErr}
	// the text encoder refuses a family without metrics
	return slices.DeleteFunc(all, func(f *dto.MetricFamily) bool { return len(f.Metric) == 0 }), nil
}

func family(name, help string, typ dto.MetricType) *dto.MetricFamily {
	return &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: typ.Enum()}
}

func labels(kv ...string) []*dto.LabelPair {
	out := make([]*dto.LabelPair, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, &dto.LabelPair{Name: proto.String(kv[i]), Value: proto.String(kv[i+1])})
	}
	return out
}

// add appends to f a metric of f's type valued v, read at t.
func add(f *dto.MetricFamily, l []*dto.LabelPair, v float64, t time.Time) {
	m := &dto.Metric{Label: l, TimestampMs: proto.Int64(t.UnixMilli())}
	if f.GetType() == dto.MetricType_COUNTER {
		m.Counter = &dto.Counter{Value: proto.Float64(v)}
	} else {
		m.Gauge = &dto.Gauge{Value: proto.Float64(v)}
	}
	f.Metric = append(f.Metric, m)
}

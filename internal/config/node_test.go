package config

import (
	"strings"
	"testing"
	"time"
)

func TestNodeDefaults(t *testing.T) {
	c, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	n := c.Node
	got := []string{n.CPU, n.Memory, n.Pods, n.GPUs, n.InternalIP, n.KubeletAPI.Listen, string(n.KubeletAPI.Certificate)}
	want := []string{"", "", "1000", "", "127.0.0.1", "127.0.0.1:10250", "csr"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got node defaults %v; want %v", got, want)
	}
	if n.CapacityInterval != DefaultCapacityInterval || len(n.Partitions) != 0 || n.GPUResource != "" {
		t.Errorf("got interval %s, partitions %v, GPU resource %q; want 5m, none (the default partition), by type",
			n.CapacityInterval, n.Partitions, n.GPUResource)
	}
	if len(n.Taints) != 1 || n.Taints[0].String() != "virtual-kubelet.io/provider=sluice:NoSchedule" {
		t.Errorf("got taints %v; want sluice's own", n.Taints)
	}
}

func TestNodeTaints(t *testing.T) {
	src := minimal + `Node:
  Taints:
    - {Key: virtual-node.interlink/no-schedule, Value: "true", Effect: NoSchedule}
    - {Key: example.org/gpu, Effect: PreferNoSchedule}
`
	c, err := Parse([]byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	var got []string
	for _, tt := range c.Node.Taints {
		got = append(got, tt.String())
	}
	want := []string{InterLinkTaint.String(), "example.org/gpu:PreferNoSchedule"}
	if strings.Join(got, " ") != strings.Join(want, " ") || want[0] != "virtual-node.interlink/no-schedule=true:NoSchedule" {
		t.Errorf("got taints %q; want %q", got, want)
	}
}

func TestNodeAccepted(t *testing.T) {
	src := minimal + `Node:
  CPU: 500m
  Memory: 64Gi
  Pods: "20"
  GPUs: "4"
  Partitions: [gpu, batch]
  CapacityInterval: 1m
  GPUResource: amd.com/gpu
  ExtendedResources: {shard: example.com/shard}
  Labels: {site: cern, example.org/queue: gpu}
  InternalIP: 10.0.0.5
  KubeletAPI:
    Listen: 0.0.0.0:0
    CertFile: /etc/sluice/tls.crt
    KeyFile: /etc/sluice/tls.key
    ClientCAFile: /etc/sluice/ca.crt
`
	c, err := Parse([]byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got := c.Node.KubeletAPI.Certificate; got != CertificateFile {
		t.Errorf("got Certificate %q with CertFile set; want file", got)
	}
	if c.Node.KubeletAPI.Listen != "0.0.0.0:0" || c.Node.Labels["site"] != "cern" {
		t.Errorf("got Listen %q labels %v; want 0.0.0.0:0 and site=cern", c.Node.KubeletAPI.Listen, c.Node.Labels)
	}
	if n := c.Node; len(n.Partitions) != 2 || n.CapacityInterval != time.Minute || n.GPUResource != "amd.com/gpu" ||
		n.ExtendedResources["shard"] != "example.com/shard" {
		t.Errorf("got %+v; want partitions gpu and batch, 1m, amd.com/gpu, shard", n)
	}
}

func TestNodeRejected(t *testing.T) {
	tests := []struct {
		name, node, want string
	}{
		{"bad cpu", "  CPU: lots\n", "Node.CPU"},
		{"negative memory", "  Memory: -1Gi\n", "Node.Memory"},
		{"fractional pods", "  Pods: 1500m\n", "Node.Pods"},
		{"fractional gpus", "  GPUs: \"0.5\"\n", "Node.GPUs"},
		{"bad label key", "  Labels: {\"a b\": x}\n", "Node.Labels[a b]"},
		{"bad label value", "  Labels: {a: \"x y\"}\n", "Node.Labels[a]"},
		{"hostname label", "  Labels: {kubernetes.io/hostname: x}\n", "Node.Labels[kubernetes.io/hostname]"},
		{"bad internal ip", "  InternalIP: node.example\n", "Node.InternalIP"},
		{"unspecified internal ip", "  InternalIP: 0.0.0.0\n", "Node.InternalIP"},
		{"listen without port", "  KubeletAPI: {Listen: 127.0.0.1}\n", "Node.KubeletAPI.Listen"},
		{"listen bad port", "  KubeletAPI: {Listen: \"127.0.0.1:99999\"}\n", "Node.KubeletAPI.Listen"},
		{"metrics without port", "  MetricsListen: 127.0.0.1\n", "Node.MetricsListen"},
		{"metrics bad port", "  MetricsListen: \":70000\"\n", "Node.MetricsListen"},
		{"taint effect", "  Taints: [{Key: a, Value: b, Effect: Never}]\n", "Node.Taints[0].Effect"},
		{"taint key", "  Taints: [{Key: \"a b\", Effect: NoSchedule}]\n", "Node.Taints[0].Key"},
		{"taint value", "  Taints: [{Key: a, Value: \"x y\", Effect: NoSchedule}]\n", "Node.Taints[0].Value"},
		{"taint repeated", "  Taints: [{Key: a, Effect: NoSchedule}, {Key: a, Value: b, Effect: NoSchedule}]\n", "Node.Taints[1]: repeats"},
		{"no taint keeps pods off", "  Taints: [{Key: a, Effect: PreferNoSchedule}]\n", "Node.Taints: needs a NoSchedule or NoExecute taint"},
		{"listen host name", "  KubeletAPI: {Listen: \"localhost:1\"}\n", "Node.KubeletAPI.Listen"},
		{"cert without key", "  KubeletAPI: {CertFile: /c}\n", "Node.KubeletAPI.CertFile"},
		{"relative key", "  KubeletAPI: {CertFile: /c, KeyFile: k}\n", "Node.KubeletAPI.KeyFile"},
		{"unknown certificate source", "  KubeletAPI: {Certificate: acme}\n", "Node.KubeletAPI.Certificate: must be csr, file or self-signed"},
		{"file without files", "  KubeletAPI: {Certificate: file}\n", "Node.KubeletAPI.CertFile: Certificate: file needs CertFile and KeyFile"},
		{"files with csr", "  KubeletAPI: {Certificate: csr, CertFile: /c, KeyFile: /k}\n", "Node.KubeletAPI.CertFile: is read only with Certificate: file"},
		{"lifetime with self-signed", "  KubeletAPI: {Certificate: self-signed, CertificateLifetime: 1h}\n", "Node.KubeletAPI.CertificateLifetime: applies only to Certificate: csr"},
		{"lifetime too short", "  KubeletAPI: {CertificateLifetime: 5m}\n", "Node.KubeletAPI.CertificateLifetime: must be at least 10m0s"},
		{"renew after the end", "  KubeletAPI: {CertificateLifetime: 1h, CertificateRenewBefore: 1h}\n", "Node.KubeletAPI.CertificateRenewBefore: must be less than CertificateLifetime"},
		{"negative renew before", "  KubeletAPI: {CertificateRenewBefore: -1m}\n", "Node.KubeletAPI.CertificateRenewBefore: must not be negative"},
		{"relative client ca", "  KubeletAPI: {ClientCAFile: ca.crt}\n", "Node.KubeletAPI.ClientCAFile"},
		{"negative sessions per pod", "  KubeletAPI: {MaxSessionsPerPod: -1}\n", "Node.KubeletAPI.MaxSessionsPerPod"},
		{"fewer sessions per node than per pod", "  KubeletAPI: {MaxSessionsPerPod: 9, MaxSessionsPerNode: 3}\n", "Node.KubeletAPI.MaxSessionsPerNode"},
		{"unknown key", "  Cpus: 4\n", "Cpus"},
		{"partition with a comma", "  Partitions: [\"a,b\"]\n", "Node.Partitions[0]"},
		{"capacity read too often", "  CapacityInterval: 1s\n", "Node.CapacityInterval"},
		{"negative capacity interval", "  CapacityInterval: -5m\n", "Node.CapacityInterval"},
		{"unknown gpu resource", "  GPUResource: intel.com/gpu\n", "Node.GPUResource"},
		{"gpu as extended", "  ExtendedResources: {gpu: example.com/gpu}\n", "Node.ExtendedResources[gpu]"},
		{"bad gres name", "  ExtendedResources: {\"a b\": example.com/x}\n", "Node.ExtendedResources[a b]"},
		{"kubernetes domain", "  ExtendedResources: {shard: kubernetes.io/shard}\n", "Node.ExtendedResources[shard]"},
		{"no domain", "  ExtendedResources: {shard: shard}\n", "Node.ExtendedResources[shard]"},
		{"extended as gpu", "  ExtendedResources: {mps: nvidia.com/gpu}\n", "Node.ExtendedResources[mps]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(minimal + "Node:\n" + tt.node))
			if err == nil {
				t.Fatalf("Parse accepted it; want an error naming %s", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %q; want it to name %s", err, tt.want)
			}
		})
	}
}

package config

import (
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Node describes the virtual node: what it offers the scheduler and where
// its kubelet API listens.
type Node struct {
	// CPU, Memory and GPUs, set, are the node's capacity (and allocatable)
	// as Kubernetes quantities; empty, they are read from the site's
	// partitions (Partitions) every CapacityInterval. GPUs counts
	// GPUResource, nvidia.com/gpu if that is empty. Pods is how many pods
	// the node takes; if empty, 1000.
	CPU    string `yaml:"CPU"`
	Memory string `yaml:"Memory"`
	Pods   string `yaml:"Pods"`
	GPUs   string `yaml:"GPUs"`
	// Partitions are the Slurm partitions whose nodes make the node's
	// capacity, each node counted once. If empty, the site's default
	// partition.
	Partitions []string `yaml:"Partitions"`
	// CapacityInterval is how often the capacity is read from the site.
	// If zero, 5m.
	CapacityInterval time.Duration `yaml:"CapacityInterval"`
	// StatsInterval is the shortest time between two reads of the running
	// jobs' usage (one sstat call) for the kubelet API's /stats/summary
	// and /metrics/resource; asked sooner, they answer the last read's
	// figures. If zero, 10s.
	StatsInterval time.Duration `yaml:"StatsInterval"`
	// GPUResource is the extended resource the site's gpu GRES is
	// advertised as: nvidia.com/gpu or amd.com/gpu. If empty, amd.com/gpu
	// for GRES types that name an AMD GPU (mi250x, instinct…), else
	// nvidia.com/gpu.
	GPUResource string `yaml:"GPUResource"`
	// ExtendedResources maps GRES names of the site (other than gpu) to the
	// extended resources the node advertises them as (shard:
	// example.com/shard).
	ExtendedResources map[string]string `yaml:"ExtendedResources"`
	// Labels are added to the node's own (type, kubernetes.io/role,
	// kubernetes.io/hostname, kubernetes.io/os, node.kubernetes.io/
	// instance-type, and interLink's virtual-node.interlink/type);
	// kubernetes.io/hostname cannot be changed.
	Labels map[string]string `yaml:"Labels"`
	// InternalIP is the node's address: the API server dials it, at the
	// kubelet API's port, for logs. If empty, 127.0.0.1.
	InternalIP string     `yaml:"InternalIP"`
	KubeletAPI KubeletAPI `yaml:"KubeletAPI"`
	// MetricsListen is the host:port where Prometheus metrics are served
	// over plain HTTP at /metrics (S7). If empty, they are not served.
	MetricsListen string `yaml:"MetricsListen"`
	// Taints are the node's taints, which the pods it runs tolerate. If
	// empty, sluice's own, virtual-kubelet.io/provider=sluice:NoSchedule. A
	// node for pods written for interLink carries interLink's instead,
	// virtual-node.interlink/no-schedule=true:NoSchedule (InterLinkTaint):
	// a pod is scheduled only on a node whose every NoSchedule and
	// NoExecute taint it tolerates, so a node with both admits only the
	// pods that tolerate both. At least one taint must keep other pods off
	// (NoSchedule or NoExecute).
	Taints []Taint `yaml:"Taints"`
}

// Taint is a taint of the node, with the keys of interLink's NodeTaints.
type Taint struct {
	Key    string `yaml:"Key"`
	Value  string `yaml:"Value"`
	Effect string `yaml:"Effect"`
}

// The node's default taint, sluice's own, and interLink's.
var (
	SluiceTaint    = Taint{Key: "virtual-kubelet.io/provider", Value: "sluice", Effect: "NoSchedule"}
	InterLinkTaint = Taint{Key: "virtual-node.interlink/no-schedule", Value: "true", Effect: "NoSchedule"}
)

// String writes t as kubectl taint does: key=value:Effect.
func (t Taint) String() string {
	if t.Value == "" {
		return t.Key + ":" + t.Effect
	}
	return t.Key + "=" + t.Value + ":" + t.Effect
}

// KubeletAPI configures the HTTPS server the API server reaches for logs.
type KubeletAPI struct {
	// Listen is the host:port to listen on. Port 0 picks a free port, which
	// the node then advertises. If empty, <InternalIP>:10250.
	Listen string `yaml:"Listen"`
	// Certificate is where the serving certificate comes from (a
	// CertificateSource). If empty, file when CertFile is set, else csr.
	Certificate CertificateSource `yaml:"Certificate"`
	// CertificateLifetime is the lifetime a csr certificate asks for
	// (spec.expirationSeconds, at least 10m); the signer may give less. If
	// zero, the signer's own (kube-controller-manager's
	// --cluster-signing-duration, a year by default).
	CertificateLifetime time.Duration `yaml:"CertificateLifetime"`
	// CertificateRenewBefore: a csr certificate is renewed once less than
	// this is left of it. If zero, once two thirds of its lifetime have
	// passed.
	CertificateRenewBefore time.Duration `yaml:"CertificateRenewBefore"`
	// CertFile and KeyFile hold the serving certificate and its key, read
	// at start-up (Certificate: file).
	CertFile string `yaml:"CertFile"`
	KeyFile  string `yaml:"KeyFile"`
	// ClientCAFile holds the CA that signs the API server's kubelet client
	// certificate. If empty, the CA the virtual kubelet trusts for the API
	// server (from its kubeconfig or the in-cluster CA) is used. Requests
	// are then authorised with a SubjectAccessReview, as a kubelet does.
	ClientCAFile string `yaml:"ClientCAFile"`
	// MaxSessionsPerPod and MaxSessionsPerNode bound the streaming sessions
	// (port-forward, exec, attach) open at once on one pod and on the whole
	// node; one more is refused with 429. If zero, 4 and 8: each exec holds
	// a session on one SSH connection to the login node, whose sshd allows
	// MaxSessions (OpenSSH: 10).
	MaxSessionsPerPod  int `yaml:"MaxSessionsPerPod"`
	MaxSessionsPerNode int `yaml:"MaxSessionsPerNode"`
	// MaxLogFollowersPerNamespace and MaxLogFollowersPerNode bound the
	// followed logs (kubectl logs -f, attach's output) open at once in
	// one namespace and on the whole node; one more is refused. If zero,
	// 20 and 100. Followers of one container share one reading of its
	// log; each holds a stream and a queue of a few MiB in sluice-vk.
	MaxLogFollowersPerNamespace int `yaml:"MaxLogFollowersPerNamespace"`
	MaxLogFollowersPerNode      int `yaml:"MaxLogFollowersPerNode"`
}

// CertificateSource is where the kubelet API's serving certificate comes
// from.
type CertificateSource string

const (
	// CertificateCSR is a CertificateSigningRequest to the API server for
	// the signer kubernetes.io/kubelet-serving, as a kubelet with
	// serverTLSBootstrap asks: for system:node:<NodeName> (group
	// system:nodes), naming the node and its InternalIP, renewed before
	// it ends. Someone must approve each request (kube-controller-manager
	// approves none of this signer's); until the first is issued, the
	// kubelet API refuses TLS handshakes and the node has a Warning Event
	// naming the request.
	CertificateCSR CertificateSource = "csr"
	// CertificateFile is CertFile and KeyFile.
	CertificateFile CertificateSource = "file"
	// CertificateSelfSigned is a certificate made at start-up for the
	// node's name and InternalIP, valid for a year, that no CA signs: only
	// an API server that does not check kubelet certificates (without
	// --kubelet-certificate-authority) accepts it.
	CertificateSelfSigned CertificateSource = "self-signed"
)

// MinCertificateLifetime is the shortest lifetime a CertificateSigningRequest
// may ask for.
const MinCertificateLifetime = 10 * time.Minute

// Default session limits of the kubelet API.
const (
	DefaultMaxSessionsPerPod  = 4
	DefaultMaxSessionsPerNode = 8
)

// Default caps of the followed logs.
const (
	DefaultMaxLogFollowersPerNamespace = 20
	DefaultMaxLogFollowersPerNode      = 100
)

// DefaultCapacityInterval is how often the capacity is read from the site
// when CapacityInterval is zero.
const DefaultCapacityInterval = 5 * time.Minute

// DefaultStatsInterval is StatsInterval when it is zero: metrics-server's
// shortest resolution, so that each of its scrapes sees new figures.
const DefaultStatsInterval = 10 * time.Second

// The GPU resources the node may advertise the site's gpu GRES as; the
// slurm package turns a request of either into --gres=gpu.
const (
	GPUResourceNVIDIA = "nvidia.com/gpu"
	GPUResourceAMD    = "amd.com/gpu"
)

// DefaultKubeletPort is the kubelet API's port when Listen is empty.
const DefaultKubeletPort = 10250

// Default fills the keys left empty.
func (n *Node) Default() {
	for _, d := range []struct {
		v   *string
		def string
	}{{&n.Pods, "1000"}, {&n.InternalIP, "127.0.0.1"}} {
		if *d.v == "" {
			*d.v = d.def
		}
	}
	if n.CapacityInterval == 0 {
		n.CapacityInterval = DefaultCapacityInterval
	}
	if n.StatsInterval == 0 {
		n.StatsInterval = DefaultStatsInterval
	}
	if n.KubeletAPI.Listen == "" {
		n.KubeletAPI.Listen = net.JoinHostPort(n.InternalIP, strconv.Itoa(DefaultKubeletPort))
	}
	if n.KubeletAPI.Certificate == "" {
		n.KubeletAPI.Certificate = CertificateCSR
		if n.KubeletAPI.CertFile != "" {
			n.KubeletAPI.Certificate = CertificateFile
		}
	}
	if n.KubeletAPI.MaxSessionsPerPod == 0 {
		n.KubeletAPI.MaxSessionsPerPod = DefaultMaxSessionsPerPod
	}
	if n.KubeletAPI.MaxSessionsPerNode == 0 {
		n.KubeletAPI.MaxSessionsPerNode = DefaultMaxSessionsPerNode
	}
	if n.KubeletAPI.MaxLogFollowersPerNamespace == 0 {
		n.KubeletAPI.MaxLogFollowersPerNamespace = DefaultMaxLogFollowersPerNamespace
	}
	if n.KubeletAPI.MaxLogFollowersPerNode == 0 {
		n.KubeletAPI.MaxLogFollowersPerNode = DefaultMaxLogFollowersPerNode
	}
	if len(n.Taints) == 0 {
		n.Taints = []Taint{SluiceTaint}
	}
}

// hostnameLabel is set by the node itself.
const hostnameLabel = "kubernetes.io/hostname"

func (n *Node) validate(bad reporter) {
	for _, f := range []struct{ key, q string }{
		{"Node.CPU", n.CPU}, {"Node.Memory", n.Memory}, {"Node.Pods", n.Pods}, {"Node.GPUs", n.GPUs},
	} {
		key, q := f.key, f.q
		if q == "" && key != "Node.Pods" {
			continue // read from the site
		}
		v, err := resource.ParseQuantity(q)
		switch {
		case err != nil:
			bad(key, "must be a quantity such as 64, 500m or 256Gi, got %q", q)
		case v.Sign() < 0:
			bad(key, "must not be negative, got %q", q)
		case (key == "Node.Pods" || key == "Node.GPUs") && v.MilliValue()%1000 != 0:
			bad(key, "must be a whole number, got %q", q)
		}
	}
	for k, v := range n.Labels {
		key := "Node.Labels[" + k + "]"
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			bad(key, "key: %s", strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			bad(key, "value: %s", strings.Join(msgs, "; "))
		}
		if k == hostnameLabel {
			bad(key, "is set by the node itself")
		}
	}
	n.validateTaints(bad)
	n.validateCapacity(bad)
	if ip := net.ParseIP(n.InternalIP); ip == nil || ip.IsUnspecified() {
		bad("Node.InternalIP", "must be an IP address the API server can dial, got %q", n.InternalIP)
	}
	a := n.KubeletAPI
	host, port, err := net.SplitHostPort(a.Listen)
	if err != nil {
		bad("Node.KubeletAPI.Listen", "must be host:port, got %q", a.Listen)
	} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		bad("Node.KubeletAPI.Listen", "port must be 0-65535, got %q", port)
	} else if host != "" && net.ParseIP(host) == nil {
		bad("Node.KubeletAPI.Listen", "host must be an IP address, got %q", host)
	}
	if n.MetricsListen != "" {
		if _, port, err := net.SplitHostPort(n.MetricsListen); err != nil {
			bad("Node.MetricsListen", "must be host:port, got %q", n.MetricsListen)
		} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			bad("Node.MetricsListen", "port must be 0-65535, got %q", port)
		}
	}
	a.validateCertificate(bad)
	absPath(bad, "Node.KubeletAPI.ClientCAFile", a.ClientCAFile, false)
	if a.MaxSessionsPerPod < 0 {
		bad("Node.KubeletAPI.MaxSessionsPerPod", "must not be negative, got %d", a.MaxSessionsPerPod)
	}
	if a.MaxSessionsPerNode < a.MaxSessionsPerPod {
		bad("Node.KubeletAPI.MaxSessionsPerNode", "must be at least MaxSessionsPerPod (%d), got %d", a.MaxSessionsPerPod, a.MaxSessionsPerNode)
	}
	if a.MaxLogFollowersPerNamespace < 0 {
		bad("Node.KubeletAPI.MaxLogFollowersPerNamespace", "must not be negative, got %d", a.MaxLogFollowersPerNamespace)
	}
	if a.MaxLogFollowersPerNode < a.MaxLogFollowersPerNamespace {
		bad("Node.KubeletAPI.MaxLogFollowersPerNode", "must be at least MaxLogFollowersPerNamespace (%d), got %d", a.MaxLogFollowersPerNamespace, a.MaxLogFollowersPerNode)
	}
}

// validateTaints checks each taint, that no two share a key and an effect,
// and that one keeps other pods off the node.
func (n *Node) validateTaints(bad reporter) {
	seen := map[string]bool{}
	keepsOff := false
	for i, t := range n.Taints {
		key := "Node.Taints[" + strconv.Itoa(i) + "]"
		if msgs := validation.IsQualifiedName(t.Key); len(msgs) > 0 {
			bad(key+".Key", "%s", strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
			bad(key+".Value", "%s", strings.Join(msgs, "; "))
		}
		switch {
		case t.Effect == "NoSchedule", t.Effect == "NoExecute":
			keepsOff = true
		case !allowed("Node.Taints[].Effect", t.Effect):
			bad(key+".Effect", "must be NoSchedule, PreferNoSchedule or NoExecute, got %q", t.Effect)
		}
		if seen[t.Key+":"+t.Effect] {
			bad(key, "repeats the taint %s:%s", t.Key, t.Effect)
		}
		seen[t.Key+":"+t.Effect] = true
	}
	if len(n.Taints) > 0 && !keepsOff {
		bad("Node.Taints", "needs a NoSchedule or NoExecute taint, else any pod may land on the virtual node")
	}
}

var (
	// partitionName and gresName match Slurm's partition and GRES names.
	partitionName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	gresName      = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)
)

// ReadsCapacity reports whether the node's capacity is read from the site:
// the configuration leaves CPU, Memory or GPUs to it, or names extended
// resources.
func (n *Node) ReadsCapacity() bool {
	return n.CPU == "" || n.Memory == "" || n.GPUs == "" || len(n.ExtendedResources) > 0
}

// validateCapacity checks the keys that say how the capacity is read from
// the site.
func (n *Node) validateCapacity(bad reporter) {
	for i, p := range n.Partitions {
		if !partitionName.MatchString(p) {
			bad("Node.Partitions["+strconv.Itoa(i)+"]", "must be a Slurm partition name (letters, digits, ._-), got %q", p)
		}
	}
	if n.CapacityInterval < 10*time.Second {
		bad("Node.CapacityInterval", "must be at least 10s, got %s", n.CapacityInterval)
	}
	if n.StatsInterval < time.Second {
		bad("Node.StatsInterval", "must be at least 1s, got %s", n.StatsInterval)
	}
	if !allowed("Node.GPUResource", n.GPUResource) {
		bad("Node.GPUResource", "must be %s or %s, got %q", GPUResourceNVIDIA, GPUResourceAMD, n.GPUResource)
	}
	for g, r := range n.ExtendedResources {
		key := "Node.ExtendedResources[" + g + "]"
		switch {
		case !gresName.MatchString(g):
			bad(key, "must be a GRES name (a letter, then letters, digits, _-)")
		case g == "gpu":
			bad(key, "gpu is counted as GPUResource")
		case !extendedResourceName(r):
			bad(key, "must be an extended resource name with a domain of your own, such as example.com/%s, got %q", g, r)
		}
	}
}

// extendedResourceName reports whether r may name an extended resource the
// node advertises: a qualified name with a domain that is not Kubernetes'
// own, and not one of the GPU resources (GPUResource counts those).
func extendedResourceName(r string) bool {
	domain, _, ok := strings.Cut(r, "/")
	if !ok || len(validation.IsQualifiedName(r)) > 0 || r == GPUResourceNVIDIA || r == GPUResourceAMD {
		return false
	}
	return domain != "kubernetes.io" && !strings.HasSuffix(domain, ".kubernetes.io") &&
		domain != "k8s.io" && !strings.HasSuffix(domain, ".k8s.io") && !strings.HasPrefix(r, "requests.")
}

// validateCertificate checks the keys of the serving certificate: each
// belongs to one source.
func (a KubeletAPI) validateCertificate(bad reporter) {
	if !allowed("Node.KubeletAPI.Certificate", string(a.Certificate)) {
		bad("Node.KubeletAPI.Certificate", "must be csr, file or self-signed, got %q", a.Certificate)
		return
	}
	if a.Certificate == CertificateFile {
		if a.CertFile == "" || a.KeyFile == "" {
			bad("Node.KubeletAPI.CertFile", "Certificate: file needs CertFile and KeyFile")
		}
		absPath(bad, "Node.KubeletAPI.CertFile", a.CertFile, false)
		absPath(bad, "Node.KubeletAPI.KeyFile", a.KeyFile, false)
	} else {
		for _, k := range []struct{ key, v string }{{"Node.KubeletAPI.CertFile", a.CertFile}, {"Node.KubeletAPI.KeyFile", a.KeyFile}} {
			if k.v != "" {
				bad(k.key, "is read only with Certificate: file, not %s", a.Certificate)
			}
		}
	}
	if a.Certificate != CertificateCSR {
		for _, k := range []struct {
			key string
			v   time.Duration
		}{{"Node.KubeletAPI.CertificateLifetime", a.CertificateLifetime}, {"Node.KubeletAPI.CertificateRenewBefore", a.CertificateRenewBefore}} {
			if k.v != 0 {
				bad(k.key, "applies only to Certificate: csr, not %s", a.Certificate)
			}
		}
		return
	}
	if a.CertificateLifetime != 0 && a.CertificateLifetime < MinCertificateLifetime {
		bad("Node.KubeletAPI.CertificateLifetime", "must be at least %s (the least a CertificateSigningRequest may ask for), got %s", MinCertificateLifetime, a.CertificateLifetime)
	}
	if a.CertificateRenewBefore < 0 {
		bad("Node.KubeletAPI.CertificateRenewBefore", "must not be negative, got %s", a.CertificateRenewBefore)
	}
	if a.CertificateLifetime != 0 && a.CertificateRenewBefore >= a.CertificateLifetime {
		bad("Node.KubeletAPI.CertificateRenewBefore", "must be less than CertificateLifetime (%s), got %s", a.CertificateLifetime, a.CertificateRenewBefore)
	}
}

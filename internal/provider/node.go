package provider

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/site"
	"github.com/virtual-kubelet/virtual-kubelet/node"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/record"
)

// Node-level names.
const (
	// TaintKey is the key of the node's default taint (config.SluiceTaint),
	// which keeps other pods off the node; pods meant for the site tolerate
	// it. Node.Taints may replace it, with interLink's for one.
	TaintKey   = "virtual-kubelet.io/provider"
	TaintValue = "sluice"
	// ConditionSiteReachable tells whether the virtual kubelet reaches the
	// site's login node.
	ConditionSiteReachable corev1.NodeConditionType = "SiteReachable"
	// KubeletVersion is what the node reports as its kubelet version.
	KubeletVersion = "v1.37.2-sluice"
	// LabelSlurmVersion is the node label with the site's Slurm version.
	LabelSlurmVersion = "sluice.io/slurm-version"
	// AnnotationSbatchOptions is the node annotation that says which
	// sbatch options the pods' flags are checked against: the site's, or
	// sluice's built-in table and why.
	AnnotationSbatchOptions = "sluice.io/sbatch-options"
	// LabelArch is the node label with the site's architecture.
	LabelArch = "kubernetes.io/arch"
)

// NewNode is the node object of the virtual node: the capacity the
// configuration sets (ConfiguredCapacity: what it leaves to the site is
// read later), labels, taints (Node.Taints, else sluice's own), address and
// kubelet API port from the configuration, Ready, SiteReachable and
// SiteCapacity Unknown until the first check and read. Its architecture is
// unknown until SetSiteInfo.
func NewNode(name string, n config.Node, kubeletPort int32, now time.Time) (*corev1.Node, error) {
	res, err := ConfiguredCapacity(n)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	capStatus, capReason := capacityCondition(n)
	labels := map[string]string{
		"type":                             "virtual-kubelet",
		"kubernetes.io/role":               "agent",
		"kubernetes.io/os":                 "linux",
		"node.kubernetes.io/instance-type": "slurm",
		// interLink's, which pods written for it select
		"virtual-node.interlink/type": "virtual-kubelet",
	}
	maps.Copy(labels, n.Labels)
	labels["kubernetes.io/hostname"] = name
	t := metav1.NewTime(now)
	cond := func(typ corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: t, LastTransitionTime: t}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.NodeSpec{
			Taints: nodeTaints(n.Taints),
		},
		Status: corev1.NodeStatus{
			Capacity:    res.Capacity,
			Allocatable: res.Allocatable,
			Phase:       corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "sluice virtual kubelet is ready"),
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", ""),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", ""),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", ""),
				cond(corev1.NodeNetworkUnavailable, corev1.ConditionFalse, "RouteCreated", ""),
				cond(ConditionSiteReachable, corev1.ConditionUnknown, "NotChecked", "the site was not checked yet"),
				cond(ConditionSiteCapacity, capStatus, capReason, res.Message),
			},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.InternalIP}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{
				KubeletEndpoint: corev1.DaemonEndpoint{Port: kubeletPort},
			},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:  KubeletVersion,
				OperatingSystem: "linux",
			},
		},
	}, nil
}

// SetSiteInfo fills the node's NodeInfo from what the site told
// (site.Describe): the login host's OS image, kernel and architecture, the
// container runtime as "<runtime>://<version>" (ContainerRuntimeVersion),
// and the Slurm version as the label LabelSlurmVersion. The architecture is
// also the label kubernetes.io/arch, unless Node.Labels set it; a machine
// Kubernetes has no name for (site.KubeArch) gets no label, so that no pod
// selecting an architecture lands there, and is told as uname -m says in
// NodeInfo. What the site did not tell is left as it was.
func SetSiteInfo(n *corev1.Node, runtime string, info site.Info) {
	ni := &n.Status.NodeInfo
	if info.Machine != "" {
		ni.Architecture = info.Machine
		if arch := site.KubeArch(info.Machine); arch != "" {
			ni.Architecture = arch
			setLabel(n, LabelArch, arch, false)
		}
	}
	if info.OS != "" {
		ni.OSImage = info.OS
	}
	if info.Kernel != "" {
		ni.KernelVersion = info.Kernel
	}
	if runtime != "" {
		ni.ContainerRuntimeVersion = runtime
		if info.RuntimeVersion != "" {
			ni.ContainerRuntimeVersion = runtime + "://" + info.RuntimeVersion
		}
	}
	if info.Slurm != "" && len(validation.IsValidLabelValue(info.Slurm)) == 0 {
		setLabel(n, LabelSlurmVersion, info.Slurm, true)
	}
}

// setLabel sets a label of n; one already set is kept unless replace.
func setLabel(n *corev1.Node, key, value string, replace bool) {
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	if _, set := n.Labels[key]; set && !replace {
		return
	}
	n.Labels[key] = value
}

// nodeTaints are the node's taints: the configured ones, else sluice's own.
func nodeTaints(ts []config.Taint) []corev1.Taint {
	if len(ts) == 0 {
		ts = []config.Taint{config.SluiceTaint}
	}
	out := make([]corev1.Taint, 0, len(ts))
	for _, t := range ts {
		out = append(out, corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	return out
}

// NodeStatus keeps the node's SiteReachable condition: it checks the site
// every Interval with Check and pushes the node when the answer changes.
// Ping answers for the virtual kubelet itself, not the site, so that the
// node's status (with SiteReachable False) still reaches the API server
// while the site is down.
type NodeStatus struct {
	// Node is the node object; NodeStatus updates its conditions.
	Node *corev1.Node
	// Check reports whether the site answers. If nil, it always does (a
	// local site).
	Check func(ctx context.Context) error
	// Interval between checks. If zero, 10s.
	Interval time.Duration
	// Timeout of one check. If zero, 10s.
	Timeout time.Duration
	// Logger. If nil, slog.Default().
	Logger *slog.Logger
	// Certificate, if set, is checked with the site: its answer is the
	// condition SSHCertificateValid (ConditionSSHCertificate).
	Certificate CertificateCheck
	// Recorder, if set, receives a Warning Event on the node when
	// SSHCertificateValid turns False.
	Recorder record.EventRecorder
	// Capacity, if set, reads the node's capacity and allocatable from
	// the site (RefreshCapacity) every CapacityInterval, and after a
	// failed read sooner. If nil, the node keeps the capacity it has.
	Capacity func(ctx context.Context) (Capacity, error)
	// CapacityInterval between reads of Capacity. If zero, 5m.
	CapacityInterval time.Duration

	mu     sync.Mutex
	notify func(*corev1.Node)
	// dirty: a change was not pushed yet (no callback was registered).
	dirty bool
	// capacityRead: Capacity was called; capacityErr: the last call's
	// error, "" if it succeeded.
	capacityRead bool
	capacityErr  string
}

var _ node.NodeProvider = (*NodeStatus)(nil)

// Ping reports the virtual kubelet alive while ctx is.
func (s *NodeStatus) Ping(ctx context.Context) error { return ctx.Err() }

// NotifyNodeStatus registers the callback that receives node changes.
func (s *NodeStatus) NotifyNodeStatus(_ context.Context, cb func(*corev1.Node)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notify = cb
}

// Reachable reports whether the last check found the site answering.
func (s *NodeStatus) Reachable() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.Node.Status.Conditions {
		if c.Type == ConditionSiteReachable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Run checks the site, and reads the node's capacity, until ctx ends.
func (s *NodeStatus) Run(ctx context.Context) {
	if s.Capacity != nil {
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Go(func() { s.runCapacity(ctx) })
	}
	interval := s.Interval
	if interval <= 0 {
		interval = 10 * time.Second
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		s.checkOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// checkOnce runs one check and pushes the node if SiteReachable changed.
func (s *NodeStatus) checkOnce(ctx context.Context) {
	var err error
	if s.Check != nil {
		cctx, cancel := context.WithTimeout(ctx, s.timeout())
		err = s.Check(cctx)
		cancel()
	}
	if ctx.Err() != nil {
		return
	}
	status, reason, msg := corev1.ConditionTrue, "SiteReachable", "the login node answers"
	if err != nil {
		status, reason, msg = corev1.ConditionFalse, unreachableReason(err), err.Error()
	}
	now := time.Now()
	s.mu.Lock()
	changed := setNodeCondition(s.Node, ConditionSiteReachable, status, reason, msg, now)
	certChanged, certWarn := s.checkCertificate(now)
	cb, n := s.pushLocked(changed || certChanged)
	s.mu.Unlock()
	if certWarn != nil {
		s.warnCertificate(certWarn)
	}
	if changed && err != nil {
		s.warnKerberos(n.Name, err)
	}
	if n == nil {
		return
	}
	log := s.logger()
	switch {
	case !changed:
	case err != nil:
		log.Warn("provider: site unreachable", "error", err)
	default:
		log.Info("provider: site reachable")
	}
	if cb != nil {
		cb(n)
	}
}

// timeout bounds one check or read of the site.
func (s *NodeStatus) timeout() time.Duration {
	if s.Timeout <= 0 {
		return 10 * time.Second
	}
	return s.Timeout
}

// pushLocked tells what to push, with s.mu held: the callback (nil if none
// is registered yet, the change then pushed at the next chance) and a copy
// of the node, or a nil node when nothing changed since the last push.
func (s *NodeStatus) pushLocked(changed bool) (func(*corev1.Node), *corev1.Node) {
	if !changed && !s.dirty {
		return nil, nil
	}
	s.dirty = s.notify == nil
	return s.notify, s.Node.DeepCopy()
}

// setNodeCondition sets a condition of n and reports whether its status or
// reason changed.
func setNodeCondition(n *corev1.Node, typ corev1.NodeConditionType, status corev1.ConditionStatus, reason, msg string, now time.Time) bool {
	t := metav1.NewTime(now)
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		if c.Type != typ {
			continue
		}
		if c.Status == status && c.Reason == reason {
			c.Message = msg
			return false
		}
		*c = corev1.NodeCondition{Type: typ, Status: status, Reason: reason, Message: msg, LastHeartbeatTime: t, LastTransitionTime: t}
		return true
	}
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{
		Type: typ, Status: status, Reason: reason, Message: msg, LastHeartbeatTime: t, LastTransitionTime: t,
	})
	return true
}

package provider

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ConditionSiteCapacity tells where the node's capacity came from: True
// with the partitions and nodes read, False when the last read failed (the
// figures before it are kept), Unknown until the first read.
const ConditionSiteCapacity corev1.NodeConditionType = "SiteCapacity"

// Capacity is the node's capacity and allocatable, and where they came from.
type Capacity struct {
	Capacity, Allocatable corev1.ResourceList
	// Message says where they came from, for the SiteCapacity condition.
	Message string
}

// capacityRetry is how soon a failed read of the capacity is tried again.
const capacityRetry = time.Minute

// amdGPUType matches the GRES types that name an AMD GPU: mi250x, amd,
// instinct_mi300, radeon, gfx90a.
var amdGPUType = regexp.MustCompile(`(?i)^(mi[0-9]|amd|instinct|radeon|gfx[0-9])`)

// GPUResource is the extended resource a gpu GRES of type typ is
// advertised as: configured (Node.GPUResource), else amd.com/gpu for an AMD
// type and nvidia.com/gpu for any other.
func GPUResource(configured, typ string) corev1.ResourceName {
	switch {
	case configured != "":
		return corev1.ResourceName(configured)
	case amdGPUType.MatchString(typ):
		return config.GPUResourceAMD
	}
	return config.GPUResourceNVIDIA
}

// ConfiguredCapacity is the node's resources before anything is read from
// the site: the amounts the configuration sets, and none of what it leaves
// to the site (a node that cannot tell what the site has offers nothing).
func ConfiguredCapacity(n config.Node) (Capacity, error) {
	c := Capacity{Capacity: corev1.ResourceList{}, Allocatable: corev1.ResourceList{}}
	err := c.override(n)
	c.Message = "the site was not read yet"
	if !n.ReadsCapacity() {
		c.Message = "set in the configuration (Node.CPU, Memory, GPUs): the site is not read"
	}
	return c, err
}

// capacityCondition is the SiteCapacity condition of a node that has read
// nothing yet: Unknown, or True when nothing is to be read.
func capacityCondition(n config.Node) (corev1.ConditionStatus, string) {
	if !n.ReadsCapacity() {
		return corev1.ConditionTrue, "Configured"
	}
	return corev1.ConditionUnknown, "NotRead"
}

// NodeCapacity is the node's resources from what the site's partitions
// offer: capacity counts every node, allocatable those that take jobs
// (drained, down and not responding nodes do not); the gpu GRES as
// GPUResource, the GRES of Node.ExtendedResources as theirs; the amounts
// the configuration sets replace the site's.
func NodeCapacity(site slurm.Capacity, n config.Node) (Capacity, error) {
	c := Capacity{Capacity: amounts(site.Total, n), Allocatable: amounts(site.Available, n)}
	for name := range c.Capacity {
		if _, ok := c.Allocatable[name]; !ok { // on nodes that take no jobs only
			c.Allocatable[name] = *resource.NewQuantity(0, resource.DecimalSI)
		}
	}
	if err := c.override(n); err != nil {
		return Capacity{}, err
	}
	c.Message = fmt.Sprintf("sinfo: %d of %d nodes of partition %s take jobs", site.Usable, site.Nodes, strings.Join(site.Partitions, ","))
	if len(site.Empty) > 0 {
		c.Message += "; no node in partition " + strings.Join(site.Empty, ",")
	}
	return c, nil
}

// amounts are the resources of a set of the site's nodes.
func amounts(a slurm.Amounts, n config.Node) corev1.ResourceList {
	list := corev1.ResourceList{
		corev1.ResourceCPU: *resource.NewQuantity(a.CPUs, resource.DecimalSI),
		// Slurm's MB are MiB. Over 8 EiB (MiB × 2^20 past an int64),
		// which the parser's bounds allow only in sum, is told as 8 EiB.
		corev1.ResourceMemory: *resource.NewQuantity(min(a.MemoryMiB, math.MaxInt64>>20)<<20, resource.BinarySI),
	}
	for k, v := range a.GRES {
		var name corev1.ResourceName
		if k.Name == "gpu" {
			name = GPUResource(n.GPUResource, k.Type)
		} else if r, ok := n.ExtendedResources[k.Name]; ok {
			name = corev1.ResourceName(r)
		} else {
			continue
		}
		q := list[name]
		q.Add(*resource.NewQuantity(v, resource.DecimalSI))
		list[name] = q
	}
	return list
}

// override sets the amounts the configuration names in both lists: Pods
// always, CPU, Memory and GPUs when set (GPUs then replaces every GPU
// resource read from the site).
func (c *Capacity) override(n config.Node) error {
	gpu := corev1.ResourceName(config.GPUResourceNVIDIA)
	if n.GPUResource != "" {
		gpu = corev1.ResourceName(n.GPUResource)
	}
	if n.GPUs != "" {
		for _, l := range []corev1.ResourceList{c.Capacity, c.Allocatable} {
			delete(l, config.GPUResourceNVIDIA)
			delete(l, config.GPUResourceAMD)
		}
	}
	for _, f := range []struct {
		name corev1.ResourceName
		q    string
	}{{corev1.ResourceCPU, n.CPU}, {corev1.ResourceMemory, n.Memory}, {gpu, n.GPUs}, {corev1.ResourcePods, n.Pods}} {
		if f.q == "" {
			continue
		}
		v, err := resource.ParseQuantity(f.q)
		if err != nil {
			return fmt.Errorf("node capacity: %s %q: %w", f.name, f.q, err)
		}
		c.Capacity[f.name], c.Allocatable[f.name] = v, v.DeepCopy()
	}
	return nil
}

// RefreshCapacity reads the node's capacity once with Capacity and pushes
// the node when it changed. A failed read keeps the figures the node has,
// turns SiteCapacity False and is logged once per distinct error.
func (s *NodeStatus) RefreshCapacity(ctx context.Context) {
	if s.Capacity == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, s.timeout())
	c, err := s.Capacity(cctx)
	cancel()
	if ctx.Err() != nil {
		return
	}
	now := time.Now()
	s.mu.Lock()
	s.capacityRead = true
	var changed, logErr bool
	if err != nil {
		logErr = err.Error() != s.capacityErr
		s.capacityErr = err.Error()
		changed = setNodeCondition(s.Node, ConditionSiteCapacity, corev1.ConditionFalse, "ReadFailed",
			"keeping the last capacity: "+err.Error(), now)
	} else {
		s.capacityErr = ""
		st := &s.Node.Status
		changed = !equality.Semantic.DeepEqual(st.Capacity, c.Capacity) || !equality.Semantic.DeepEqual(st.Allocatable, c.Allocatable)
		st.Capacity, st.Allocatable = c.Capacity, c.Allocatable
		changed = setNodeCondition(s.Node, ConditionSiteCapacity, corev1.ConditionTrue, "Read", c.Message, now) || changed
	}
	cb, n := s.pushLocked(changed)
	s.mu.Unlock()
	switch {
	case logErr:
		s.logger().Warn("provider: node capacity not read, keeping the last", "error", err)
	case err == nil && changed:
		s.logger().Info("provider: node capacity read", "source", c.Message,
			"cpu", c.Allocatable.Cpu().String(), "memory", c.Allocatable.Memory().String())
	}
	if cb != nil {
		cb(n)
	}
}

// runCapacity reads the capacity every CapacityInterval until ctx ends:
// at once if it was never read, after capacityRetry (at most) if the last
// read failed.
func (s *NodeStatus) runCapacity(ctx context.Context) {
	interval := s.CapacityInterval
	if interval <= 0 {
		interval = config.DefaultCapacityInterval
	}
	for {
		s.mu.Lock()
		wait := interval
		switch {
		case !s.capacityRead:
			wait = 0
		case s.capacityErr != "":
			wait = min(interval, capacityRetry)
		}
		s.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		s.RefreshCapacity(ctx)
	}
}

package jobscript

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

const mib = 1 << 20

// gpuResources are the extended resources counted as GPUs (--gres=gpu:N).
var gpuResources = []corev1.ResourceName{"nvidia.com/gpu", "amd.com/gpu"}

// Bounds on one container's quantities: far above any real node, low enough
// that sums over a pod's containers cannot overflow.
var (
	maxCPU    = resource.MustParse("1M")
	maxMemory = resource.MustParse("1Pi")
	maxGPUs   = resource.MustParse("1M")
)

// podResources computes what the job asks Slurm for: the containers run
// together, so their amounts add up, and the init containers one at a time,
// so the largest counts; the job gets the larger of the two. A container's
// amount is its limit, else its request. Pod-level resources, when set,
// replace the containers' CPU and memory. CPUs are rounded up to whole
// CPUs, memory to MiB. spec.activeDeadlineSeconds becomes the time limit.
func podResources(pod *corev1.Pod) (Resources, error) {
	var r Resources
	var cpu, mem, gpus [2]int64 // [0] containers together, [1] largest init container
	for k, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		field := [2]string{"spec.containers", "spec.initContainers"}[k]
		for i := range cs {
			f := fmt.Sprintf("%s[%d].resources", field, i)
			c, m, g, err := containerResources(&cs[i].Resources, f)
			if err != nil {
				return r, err
			}
			if k == 0 {
				cpu[0], mem[0], gpus[0] = cpu[0]+c, mem[0]+m, gpus[0]+g
			} else {
				cpu[1], mem[1], gpus[1] = max(cpu[1], c), max(mem[1], m), max(gpus[1], g)
			}
		}
	}
	milliCPU, bytes := max(cpu[0], cpu[1]), max(mem[0], mem[1])
	if pr := pod.Spec.Resources; pr != nil {
		c, m, _, err := containerResources(pr, "spec.resources")
		if err != nil {
			return r, err
		}
		if c > 0 {
			milliCPU = c
		}
		if m > 0 {
			bytes = m
		}
	}
	r.CPUs = ceilDiv(milliCPU, 1000)
	r.MemoryMiB = ceilDiv(bytes, mib)
	r.GPUs = max(gpus[0], gpus[1])
	if d := pod.Spec.ActiveDeadlineSeconds; d != nil {
		if *d <= 0 || *d > 1<<32 {
			return r, podErr("spec.activeDeadlineSeconds", "%d is not a usable time limit", *d)
		}
		r.TimeLimit = time.Duration(*d) * time.Second
	}
	return r, nil
}

// containerResources gives one container's milli-CPUs, bytes of memory and
// GPUs.
func containerResources(rr *corev1.ResourceRequirements, field string) (milliCPU, bytes, gpus int64, err error) {
	amount := func(name corev1.ResourceName, limit resource.Quantity) (resource.Quantity, error) {
		q, ok := rr.Limits[name]
		f := field + ".limits[" + string(name) + "]"
		if !ok {
			q = rr.Requests[name]
			f = field + ".requests[" + string(name) + "]"
		}
		if q.Sign() < 0 || q.Cmp(limit) > 0 {
			return q, podErr(f, "%s is out of range", q.String())
		}
		return q, nil
	}
	c, err := amount(corev1.ResourceCPU, maxCPU)
	if err != nil {
		return 0, 0, 0, err
	}
	m, err := amount(corev1.ResourceMemory, maxMemory)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, name := range gpuResources {
		g, err := amount(name, maxGPUs)
		if err != nil {
			return 0, 0, 0, err
		}
		gpus += g.Value()
	}
	return c.MilliValue(), m.Value(), gpus, nil
}

func ceilDiv(a, b int64) int64 {
	n := a / b
	if a%b != 0 {
		n++
	}
	return n
}

// writtenResources are the resources of job that its script states. The
// pod's flags win over its resources (they come after them in the script),
// but sbatch refuses a job that asks for memory both per node and per CPU
// or GPU ("--mem, --mem-per-cpu, and --mem-per-gpu are mutually
// exclusive"), or for CPUs both per task and per GPU, instead of taking the
// later line: so the line that flags asking per CPU or GPU replace is left
// out. interLink's tutorial pods ask --mem-per-cpu, and a flavor's
// MemoryDefault must not fail them.
func writtenResources(job *Job) Resources {
	r := job.Resources
	for _, f := range job.Flags {
		name, _, _ := strings.Cut(f, "=")
		switch name {
		case "--mem-per-cpu", "--mem-per-gpu":
			r.MemoryMiB = 0
		case "--cpus-per-gpu":
			r.CPUs = 0
		}
	}
	return r
}

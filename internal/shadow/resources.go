package shadow

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// tunnelResources are the requests and limits of a tunnel container, from
// what sluice-tunnel used on the rig (bench/RESULTS.md, "Tunnel container
// resources": bench/tunnelmem.sh sampling the real binary every 100 ms
// under the forward and reverse benchmarks, on 2 cores shared with the
// sshds and the benchmark's clients and servers; forward: 3 runs, one of
// them with 64 streams, reverse: 2 runs):
//
//	         RSS idle        RSS after load  VmHWM          busiest second  top throughput
//	forward  11.2 MiB        17.0-23.9 MiB   35.9-65.2 MiB  0.49-0.81 core  370 MB/s
//	reverse  10.6-11.4 MiB   22.9 MiB        28.9-30.8 MiB  0.69-0.78 core  211 MB/s
//
// Requests: 32 MiB, above what a tunnel holds after carrying load, and 50m
// CPU: a tunnel is idle most of the time, yet should keep a share of a
// busy node. Limits: 256 MiB, four times the highest peak, for more
// concurrent streams than measured (each busy SSH channel may buffer up to
// its 2 MiB window), and 1 CPU, above the busiest second seen, so that the
// limit does not throttle a tunnel moving hundreds of MB/s; Go still runs
// two threads of Go code under it, as measured (a limit below 2 CPUs
// rounds GOMAXPROCS up to 2). With requests and limits set, a shadow also
// runs in a namespace whose ResourceQuota asks for them.
func tunnelResources() corev1.ResourceRequirements {
	return resources("50m", "32Mi", "1", "256Mi")
}

// holdResources are those of the hold container: the same binary, asleep
// (11.4 MiB RSS, no CPU seen in 5 s).
func holdResources() corev1.ResourceRequirements {
	return resources("10m", "16Mi", "100m", "64Mi")
}

func resources(cpuRequest, memRequest, cpuLimit, memLimit string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(cpuRequest),
			corev1.ResourceMemory: resource.MustParse(memRequest),
		},
		Limits: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(cpuLimit),
			corev1.ResourceMemory: resource.MustParse(memLimit),
		},
	}
}

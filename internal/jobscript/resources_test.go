package jobscript

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
	corev1 "k8s.io/api/core/v1"
)

func TestPodResources(t *testing.T) {
	res := func(limits, requests corev1.ResourceList) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Limits: limits, Requests: requests}
	}
	list := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = qty(kv[i+1])
		}
		return l
	}
	tests := []struct {
		name       string
		containers []corev1.ResourceRequirements
		init       []corev1.ResourceRequirements
		pod        *corev1.ResourceRequirements
		deadline   *int64
		want       Resources
	}{
		{"nothing asked", []corev1.ResourceRequirements{{}}, nil, nil, nil, Resources{}},
		{"requests add up, rounded up", []corev1.ResourceRequirements{
			res(nil, list("cpu", "100m", "memory", "100M")), res(nil, list("cpu", "1", "memory", "1Mi")),
		}, nil, nil, nil, Resources{CPUs: 2, MemoryMiB: 97}},
		{"limits win over requests", []corev1.ResourceRequirements{
			res(list("cpu", "3", "memory", "2Gi"), list("cpu", "1", "memory", "1Gi")),
		}, nil, nil, nil, Resources{CPUs: 3, MemoryMiB: 2048}},
		{"largest init container", []corev1.ResourceRequirements{res(nil, list("cpu", "1", "memory", "1Gi"))},
			[]corev1.ResourceRequirements{res(nil, list("cpu", "8")), res(nil, list("memory", "4Gi"))},
			nil, nil, Resources{CPUs: 8, MemoryMiB: 4096}},
		{"gpus", []corev1.ResourceRequirements{
			res(list("nvidia.com/gpu", "2"), nil), res(list("amd.com/gpu", "1"), nil),
		}, []corev1.ResourceRequirements{res(list("nvidia.com/gpu", "4"), nil)}, nil, nil, Resources{GPUs: 4}},
		{"pod-level resources", []corev1.ResourceRequirements{res(nil, list("cpu", "1", "memory", "1Gi"))}, nil,
			&corev1.ResourceRequirements{Limits: list("cpu", "6")}, nil, Resources{CPUs: 6, MemoryMiB: 1024}},
		{"deadline", []corev1.ResourceRequirements{{}}, nil, nil, ptr(int64(90)), Resources{TimeLimit: 90 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Resources: tt.pod, ActiveDeadlineSeconds: tt.deadline}}
			for _, r := range tt.containers {
				pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Resources: r})
			}
			for _, r := range tt.init {
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Resources: r})
			}
			got, err := podResources(pod)
			if err != nil || got != tt.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// Flags asking for memory per CPU or GPU, or CPUs per GPU, replace the
// line of the resources that sbatch would refuse beside them; the others
// stay.
func TestWrittenResources(t *testing.T) {
	res := Resources{CPUs: 2, MemoryMiB: 100, GPUs: 1}
	tests := []struct {
		flags []string
		want  Resources
	}{
		{nil, res},
		{[]string{"--mem=1G", "--cpus-per-task=4"}, res}, // later lines: sbatch takes them
		{[]string{"--mem-per-cpu=2000"}, Resources{CPUs: 2, GPUs: 1}},
		{[]string{"--mem-per-gpu=8G"}, Resources{CPUs: 2, GPUs: 1}},
		{[]string{"--cpus-per-gpu=4"}, Resources{MemoryMiB: 100, GPUs: 1}},
		{[]string{"--mem-per-cpu=1", "--cpus-per-gpu=4"}, Resources{GPUs: 1}},
		{[]string{"--mem-per-cpux=1"}, res},
	}
	for _, tt := range tests {
		job := &Job{Resources: res, Flags: tt.flags}
		if got := writtenResources(job); got != tt.want {
			t.Errorf("flags %q: got %+v; want %+v", tt.flags, got, tt.want)
		}
		if job.Resources != res {
			t.Errorf("flags %q: the job's resources changed to %+v", tt.flags, job.Resources)
		}
	}
	pod := scripttest.SimplePod("/img.sif")
	pod.Annotations = map[string]string{AnnotationFlags: "--job-name=test-pod-cfg -t 2800 --ntasks=8 --nodes=1 --mem-per-cpu=2000"}
	job := fromPod(t, pod, RuntimeApptainer)
	job.Resources.MemoryMiB = 100 // as a flavor's MemoryDefault gives it
	script, err := Script(job, ScriptOptions{JobDir: "/job", Runtime: RuntimeApptainer})
	if err != nil {
		t.Fatalf("Script: %v", err)
	}
	if s := string(script); strings.Contains(s, "#SBATCH --mem=") || !strings.Contains(s, "#SBATCH --mem-per-cpu=2000\n") {
		t.Errorf("the script asks memory per node beside --mem-per-cpu, or not per CPU:\n%s", s)
	}
}

package slurm

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probedPod has one container per kind of readiness probe, with values a
// shell would read: quotes, $, spaces.
func probedPod() *corev1.Pod {
	p := simplePod("busybox")
	c := p.Spec.Containers[0]
	c.Command = []string{"sh", "-c", "sleep 600"}
	web, exec, tcp := c, c, c
	web.Name, exec.Name, tcp.Name = "web", "checked", "db"
	web.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	web.ReadinessProbe = &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/healthz?who='me'&x=$(id)", Port: intstr.FromString("http"),
			HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: `it's "$HOME"`}},
		}},
		InitialDelaySeconds: 2, PeriodSeconds: 3, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
	}
	exec.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", `test -e "$HOME/ready" && echo '$x'`}}},
		PeriodSeconds: 1, TimeoutSeconds: 2, SuccessThreshold: 2, FailureThreshold: 1,
	}
	tcp.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(5432), Host: "db.example.org"}},
		PeriodSeconds: 5, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
	}
	web.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "kill -USR1 1; sleep 3"}}}}
	tcp.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/quit", Port: intstr.FromInt32(5433)}}}
	grace := int64(20)
	p.Spec.TerminationGracePeriodSeconds = &grace
	p.Spec.Containers = []corev1.Container{web, exec, tcp, c}
	return p
}

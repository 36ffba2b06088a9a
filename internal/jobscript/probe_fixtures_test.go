package jobscript

import (
	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probedPod has one container per kind of readiness probe, with values a
// shell would read: quotes, $, spaces.
func probedPod() *corev1.Pod {
	p := scripttest.SimplePod("busybox")
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

// livePod has a container with liveness and startup probes and both
// hooks, one with a liveness probe only, and one with none; its
// restartPolicy is OnFailure and its grace period 15 s.
func livePod() *corev1.Pod {
	p := scripttest.SimplePod("busybox")
	c := p.Spec.Containers[0]
	c.Command = []string{"sh", "-c", "sleep 600"}
	app, side, plain := c, c, c
	app.Name, side.Name, plain.Name = "app", "side", "plain"
	app.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	app.StartupProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/started", Port: intstr.FromString("http")}},
		PeriodSeconds: 2, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 30,
	}
	app.LivenessProbe = &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", `test -e "$HOME/alive"`}}},
		InitialDelaySeconds: 3, PeriodSeconds: 5, TimeoutSeconds: 2, SuccessThreshold: 1, FailureThreshold: 3,
	}
	app.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1,
	}
	app.Lifecycle = &corev1.Lifecycle{
		PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo '$started' > /tmp/started"}}},
		PreStop:   &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/quit", Port: intstr.FromInt32(8080)}},
	}
	side.LivenessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9090)}},
		PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
	}
	grace := int64(15)
	p.Spec.TerminationGracePeriodSeconds = &grace
	p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	p.Spec.Containers = []corev1.Container{app, side, plain}
	return p
}

// allProbesPod is probedPod with livePod's app and side beside its
// containers, and livePod's restartPolicy: every kind of probe and hook
// in one pod, for the golden scripts.
func allProbesPod() *corev1.Pod {
	p, live := probedPod(), livePod()
	p.Spec.Containers = append(p.Spec.Containers, live.Spec.Containers[:2]...)
	p.Spec.RestartPolicy = live.Spec.RestartPolicy
	return p
}

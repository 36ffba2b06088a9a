//go:build e2e

package e2e

import (
	"context"
	"net"
	"os"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// addSiteKeys adds keys (indented two spaces) under Site: in the env's
// configuration, before sluice-vk starts.
func (e *env) addSiteKeys(keys string) {
	e.t.Helper()
	cfg, err := os.ReadFile(e.cfgFile)
	if err != nil {
		e.t.Fatal(err)
	}
	with := strings.Replace(string(cfg), "\nSite:\n", "\nSite:\n"+keys, 1)
	if with == string(cfg) {
		e.t.Fatal("no Site: in the configuration")
	}
	if err := os.WriteFile(e.cfgFile, []byte(with), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// sliceEndpoint is pod's endpoint in the EndpointSlices of Service svc,
// with the slice's first port; ok is false while there is none.
func (e *env) sliceEndpoint(svc string, pod *corev1.Pod) (ep discoveryv1.Endpoint, port int32, ok bool) {
	list, err := e.client.DiscoveryV1().EndpointSlices(e.ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + svc,
	})
	if err != nil {
		return ep, 0, false
	}
	for _, s := range list.Items {
		for _, x := range s.Endpoints {
			if x.TargetRef != nil && x.TargetRef.UID == pod.UID && len(s.Ports) > 0 && s.Ports[0].Port != nil {
				return x, *s.Ports[0].Port, true
			}
		}
	}
	return ep, 0, false
}

// endpointReady is the endpoint's ready condition ("unset" when the
// controller left it out).
func endpointReady(ep discoveryv1.Endpoint) string {
	if ep.Conditions.Ready == nil {
		return "unset"
	}
	return strconv.FormatBool(*ep.Conditions.Ready)
}

// podReady tells whether the pod's Ready condition is True.
func podReady(p *corev1.Pod) bool {
	c := podCondition(p, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// TestServiceFollowsReadiness: a ClusterIP Service selecting an offloaded
// pod whose readiness probe (run in the job, Site.EnableProbes) fails
// lists the pod's address as not ready and sends nothing to it, nor does
// the pod's shadow Service, although the job's server answers at the
// pod's IP; once the probe passes, the endpoint is ready and clients on
// the host and in a pod reach the job through the Service, and through
// the shadow's; when the probe fails again, both stop.
func TestServiceFollowsReadiness(t *testing.T) {
	e := newTunnelEnv(t, tunnelOpts{site: "  EnableProbes: true\n"})
	ctx := context.Background()
	start := time.Now()
	since := func() time.Duration { return time.Since(start).Round(100 * time.Millisecond) }

	svc, err := e.client.CoreV1().Services(e.ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create service web: %v", err)
	}
	through := serviceAddr(t, svc, 80)

	// the server answers from the start; the probe passes while
	// /mnt/ready exists, which the test makes and removes
	pod := e.pod("web", "busybox httpd -f -p 127.0.0.1:8080 -h /etc & sleep 600\n")
	pod.Labels = map[string]string{"app": "web"}
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	c := &pod.Spec.Containers[0]
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/mnt"}}
	c.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-e", "/mnt/ready"}}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}
	created := e.create(pod)
	readyFile := path.Join(e.rig.Get(t, "RIG_DATA_ROOT"), e.ns+"-"+string(created.UID), "volumes/data/ready")

	// not ready: the job's server answers at the pod's IP, the Service
	// lists that address as not ready and sends nothing
	e.waitPod("web", "Running", 120*time.Second, phaseIs(corev1.PodRunning))
	t.Logf("%v: Running", since())
	var cur *corev1.Pod
	var direct string
	e.waitFor("the job's server at the pod's IP", 90*time.Second, func() bool {
		p, err := e.client.CoreV1().Pods(e.ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil || p.Status.PodIP == "" {
			return false
		}
		cur, direct = p, net.JoinHostPort(p.Status.PodIP, "8080")
		body, err := httpGet(direct, "/hosts")
		return err == nil && strings.Contains(body, "localhost")
	})
	t.Logf("%v: the job's server answers at the pod's IP %s", since(), direct)
	var ep discoveryv1.Endpoint
	var port int32
	e.waitFor("the pod's address in Service web's EndpointSlice, not ready", 30*time.Second, func() bool {
		p, err := e.client.CoreV1().Pods(e.ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false
		}
		var ok bool
		cur = p
		ep, port, ok = e.sliceEndpoint("web", p)
		return ok && len(ep.Addresses) > 0 && ep.Addresses[0] == p.Status.PodIP && endpointReady(ep) == "false"
	})
	if port != 8080 {
		t.Errorf("EndpointSlice port %d; want the container's 8080", port)
	}
	t.Logf("%v: EndpointSlice lists %s:%d ready=%s", since(), ep.Addresses[0], port, endpointReady(ep))
	// the address listed is where the job's server answers
	direct = net.JoinHostPort(cur.Status.PodIP, "8080")
	if body, err := httpGet(direct, "/hosts"); err != nil || !strings.Contains(body, "localhost") {
		t.Fatalf("the job's server at the endpoint's address %s: %q, %v; want its /etc/hosts", direct, firstLine(body), err)
	}
	// the tunnel up, so that nothing but readiness holds the Services back
	e.waitTunnel("web", corev1.ConditionTrue, "")
	t.Logf("%v: TunnelReady", since())
	shadowSvc := e.shadowAddr(created, 8080)
	e.serviceRefuses("before the probe passed", through, shadowSvc)
	if p := e.waitPod("web", "still Running", time.Second, phaseIs(corev1.PodRunning)); podReady(p) {
		t.Fatal("the pod is Ready before its readiness file exists")
	}

	// ready: the endpoint is, and the Service carries
	if out, err := e.site.Run(ctx, nil, "touch", readyFile); err != nil {
		t.Fatalf("touch %s: %v: %s", readyFile, err, out)
	}
	touched := time.Now()
	after := func() time.Duration { return time.Since(touched).Round(100 * time.Millisecond) }
	e.waitPod("web", "Ready", 60*time.Second, podReady)
	t.Logf("%v: Ready, %v after the readiness file was made", since(), after())
	e.waitFor("the pod's endpoint ready", 30*time.Second, func() bool {
		p, err := e.client.CoreV1().Pods(e.ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false
		}
		ep, _, ok := e.sliceEndpoint("web", p)
		return ok && len(ep.Addresses) > 0 && ep.Addresses[0] == p.Status.PodIP && endpointReady(ep) == "true"
	})
	t.Logf("%v: endpoint ready, %v after the readiness file was made", since(), after())
	var body string
	told := false
	e.waitFor("the job's server through Service web ("+through+")", 60*time.Second, func() bool {
		body, err = httpGet(through, "/hosts")
		if err != nil && !told {
			t.Logf("the Service %s, the endpoint ready: %v", through, err)
			told = true
		}
		return err == nil && strings.Contains(body, "localhost")
	})
	t.Logf("%v: through the Service, %v after the readiness file was made: %q", since(), after(), firstLine(body))
	e.waitFor("the job's server through the shadow Service ("+shadowSvc+")", 60*time.Second, func() bool {
		body, err = httpGet(shadowSvc, "/hosts")
		return err == nil && strings.Contains(body, "localhost")
	})
	t.Logf("%v: through the shadow Service, %v after the readiness file was made", since(), after())
	byName := "web." + e.ns + ".svc.cluster.local"
	if out := e.clientPod(byName, "80", "/hosts"); !strings.Contains(out, "localhost") {
		t.Errorf("a client pod fetching from %s got %q; want the job's /etc/hosts", byName, out)
	} else {
		t.Logf("a client pod on the cluster's node fetched /hosts from %s: %q", byName, firstLine(out))
	}

	// not ready again: the Service stops sending
	if out, err := e.site.Run(ctx, nil, "rm", "-f", readyFile); err != nil {
		t.Fatalf("rm %s: %v: %s", readyFile, err, out)
	}
	removed := time.Now()
	e.waitPod("web", "not Ready", 60*time.Second, func(p *corev1.Pod) bool { return !podReady(p) })
	e.waitFor("the Services to stop", 30*time.Second, func() bool {
		_, err := httpGet(through, "/hosts")
		_, errShadow := httpGet(shadowSvc, "/hosts")
		return err != nil && errShadow != nil
	})
	t.Logf("both Services stopped %v after the readiness file was removed", time.Since(removed).Round(100*time.Millisecond))
	e.serviceRefuses("after the probe failed again", through, shadowSvc)
	if _, err := httpGet(direct, "/hosts"); err != nil {
		t.Errorf("the job's server at the pod's IP %s, not ready: %v; want it still answering", direct, err)
	}
}

// serviceRefuses checks, five times a second apart, that each of addrs
// (Services) gives no answer from the job.
func (e *env) serviceRefuses(when string, addrs ...string) {
	e.t.Helper()
	for i := 0; i < 5; i++ {
		for _, addr := range addrs {
			body, err := httpGet(addr, "/hosts")
			if err == nil {
				e.t.Fatalf("%s: the Service %s answered %q; want nothing", when, addr, firstLine(body))
			}
			if i == 0 {
				e.t.Logf("%s: the Service %s: %v", when, addr, err)
			}
		}
		time.Sleep(time.Second)
	}
}

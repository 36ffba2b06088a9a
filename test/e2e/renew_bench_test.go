//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// renewForEnv, when set to a Go duration, makes TestRenewalOutlivesTheTimeLimit
// the benchmark of bench/renewal.sh: clients run that long against a renewed
// pod and a pod without renewal (issue 27, item 4).
const renewForEnv = "SLUICE_RENEW_FOR"

// renewFor is the benchmark's duration, 0 for the test.
func renewFor(t *testing.T) time.Duration {
	v := os.Getenv(renewForEnv)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 3*time.Minute {
		t.Fatalf("%s=%q: want a Go duration of at least 3m (two renewals of a 2-minute limit)", renewForEnv, v)
	}
	return d
}

// servedPod is a pod of the benchmark: an HTTP server on the node's
// loopback at port, with a 2-minute time limit, a Service selecting it,
// and a client each through its IP and through its Service.
type servedPod struct {
	name    string
	port    int
	created *corev1.Pod
	ip      string
	svc     *corev1.Service
	byIP    *renewClient
	bySvc   *renewClient
}

// servePod creates the pod name, renewed 30 s before its limit when renew
// is true, and its Service.
func servePod(e *env, name string, renew bool) *servedPod {
	e.t.Helper()
	ctx := context.Background()
	s := &servedPod{name: name, port: 20000 + rand.IntN(20000)}
	limit, grace := int64(120), int64(2)
	pod := e.pod(name, "until busybox httpd -f -p 127.0.0.1:"+strconv.Itoa(s.port)+" -h /etc; do sleep 0.1; done\n")
	pod.Labels = map[string]string{"bench": name}
	if renew {
		pod.Annotations = map[string]string{"sluice.io/renew-before": "30s"}
	}
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	pod.Spec.ActiveDeadlineSeconds = &limit
	pod.Spec.TerminationGracePeriodSeconds = &grace
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: int32(s.port), Protocol: corev1.ProtocolTCP}}
	s.created = e.create(pod)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"bench": name},
			Ports:    []corev1.ServicePort{{Port: int32(s.port), TargetPort: intstr.FromInt32(int32(s.port))}},
		},
	}
	var err error
	if s.svc, err = e.client.CoreV1().Services(e.ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create service %s: %v", name, err)
	}
	return s
}

// waitServed waits until the pod serves at its shadow pod's IP and
// through its Service, and starts its clients.
func (s *servedPod) waitServed(e *env) {
	e.t.Helper()
	e.waitTunnel(s.name, corev1.ConditionTrue, "")
	_, pods, err := net.ParseCIDR(e.rig.Get(e.t, "RIG_K8S_POD_CIDR"))
	if err != nil {
		e.t.Fatalf("RIG_K8S_POD_CIDR: %v", err)
	}
	running := e.waitPod(s.name, "the shadow pod's IP", 60*time.Second, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && podReady(p) && pods.Contains(net.ParseIP(p.Status.PodIP))
	})
	s.ip = running.Status.PodIP
	s.byIP = &renewClient{addr: net.JoinHostPort(s.ip, strconv.Itoa(s.port)), every: 100 * time.Millisecond}
	s.bySvc = &renewClient{addr: serviceAddr(e.t, s.svc, s.port), every: 100 * time.Millisecond}
	for _, c := range []*renewClient{s.byIP, s.bySvc} {
		e.waitFor(s.name+" at "+c.addr, 60*time.Second, func() bool {
			_, err := httpGet(c.addr, "/hosts")
			return err == nil
		})
	}
}

// renewBench runs a client through the IP and one through the Service of a
// renewed pod and of a pod without renewal, side by side for d, and logs
// for each the requests sent and failed and the longest gap between two
// answers, and for the renewed pod each renewal's cold start (from
// SuccessorSubmitted to SuccessorReady) and hand-over (to HandedOver). It
// asserts what must hold however fast the machine: the renewed pod is
// Running throughout with the same IP, and renewed at least d/90s - 1
// times.
func renewBench(t *testing.T, e *env, d time.Duration) {
	renewed, plain := servePod(e, "renewed", true), servePod(e, "plain", false)
	renewed.waitServed(e)
	plain.waitServed(e)
	var stops []func()
	for _, c := range []*renewClient{renewed.byIP, renewed.bySvc, plain.byIP, plain.bySvc} {
		stops = append(stops, c.start())
	}
	start := time.Now()
	var phases []string
	for time.Since(start) < d {
		time.Sleep(time.Second)
		p, err := e.client.CoreV1().Pods(e.ns).Get(context.Background(), renewed.name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get pod %s: %v", renewed.name, err)
		}
		if p.Status.Phase != corev1.PodRunning || p.Status.PodIP != renewed.ip {
			phases = append(phases, fmt.Sprintf("%v: %s %s", time.Since(start).Round(time.Second), p.Status.Phase, p.Status.PodIP))
		}
	}
	for _, stop := range stops {
		stop()
	}
	t.Logf("%s of clients, one GET every 100 ms each, on a new connection:", d)
	t.Logf("| pod, path | sent | failed | longest gap between two answers |")
	t.Logf("|---|---|---|---|")
	for _, r := range []struct {
		name string
		c    *renewClient
	}{{"renewed, pod IP", renewed.byIP}, {"renewed, Service", renewed.bySvc}, {"no renewal, pod IP", plain.byIP}, {"no renewal, Service", plain.bySvc}} {
		sent, failed, gap, lastErr := r.c.result()
		gap = max(gap, time.Since(r.c.lastOK)) // a client never answered again
		t.Logf("| %s | %d | %d | %v |", r.name, sent, failed, gap.Round(time.Millisecond))
		if lastErr != nil {
			t.Logf("  %s: last error %v", r.name, lastErr)
		}
	}
	steps := renewalSteps(t, e, renewed.created)
	t.Logf("renewals: %d", len(steps))
	for i, s := range steps {
		t.Logf("renewal %d: cold start (submitted to ready) %v, ready to handed over %v", i+1, s.coldStart, s.handOver)
	}
	if len(phases) > 0 {
		t.Errorf("the renewed pod left Running or its IP %s: %q", renewed.ip, phases)
	}
	if want := int(d/(90*time.Second)) - 1; len(steps) < want {
		t.Errorf("%d renewals in %v; want at least %d", len(steps), d, want)
	}
	for _, ev := range e.events(plain.created) {
		t.Logf("no renewal: event %s", ev)
	}
}

// renewalStep is one renewal of a pod, from its Events' times.
type renewalStep struct{ coldStart, handOver time.Duration }

// renewalSteps reads the pod's renewals from the times of its Events:
// each SuccessorSubmitted, the SuccessorReady after it and the HandedOver
// after that (Events of one reason and differing messages are not merged),
// to the second: the resolution of an Event's time.
func renewalSteps(t *testing.T, e *env, pod *corev1.Pod) []renewalStep {
	list, err := e.client.CoreV1().Events(e.ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(pod.UID)).String(),
	})
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	at := map[string][]time.Time{}
	for _, ev := range list.Items {
		when := ev.FirstTimestamp.Time
		if !ev.EventTime.IsZero() {
			when = ev.EventTime.Time
		}
		at[ev.Reason] = append(at[ev.Reason], when)
	}
	for _, times := range at {
		slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	}
	var steps []renewalStep
	for i, ready := range at["SuccessorReady"] {
		if i >= len(at["SuccessorSubmitted"]) || i >= len(at["HandedOver"]) {
			break
		}
		steps = append(steps, renewalStep{coldStart: ready.Sub(at["SuccessorSubmitted"][i]), handOver: at["HandedOver"][i].Sub(ready)})
	}
	if failed := at["SuccessorFailed"]; len(failed) > 0 {
		t.Logf("SuccessorFailed %d times: the renewals after it are paired by order, and may be off", len(failed))
	}
	return steps
}

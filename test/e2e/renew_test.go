//go:build e2e

package e2e

import (
	"context"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRenewalOutlivesTheTimeLimit: an HTTP service with a 2-minute time
// limit, renewed 30 s before it (sluice.io/renew-before), is served through
// the pod's IP across the handover: a successor job is submitted before the
// limit, takes over once its container runs, the old job is cancelled, and
// the pod stays Running with its IP, its status naming the new job. A
// client sends a request every 100 ms through the pod's IP all along; the
// failed requests and the longest gap between two answers are logged.
//
// With SLUICE_RENEW_FOR set it is the benchmark of bench/renewal.sh instead
// (renewBench).
//
// The rig has one compute node: the successor runs beside the old job and
// can bind the service's port only once the old job's server is gone, so
// the gap measured is that of a service that cannot share its port.
func TestRenewalOutlivesTheTimeLimit(t *testing.T) {
	parallel(t)
	e := newTunnelEnv(t)
	if d := renewFor(t); d > 0 {
		renewBench(t, e, d)
		return
	}
	ctx := context.Background()
	port := 20000 + rand.IntN(20000) // the node's loopback is shared by the parallel tests
	limit, grace := int64(120), int64(2)
	pod := e.pod("svc", "until busybox httpd -f -p 127.0.0.1:"+strconv.Itoa(port)+" -h /etc; do sleep 0.1; done\n")
	pod.Annotations = map[string]string{"sluice.io/renew-before": "30s"}
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	pod.Spec.ActiveDeadlineSeconds = &limit
	pod.Spec.TerminationGracePeriodSeconds = &grace
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port), Protocol: corev1.ProtocolTCP}}
	created := e.create(pod)
	start := time.Now()
	since := func() time.Duration { return time.Since(start).Round(100 * time.Millisecond) }

	e.waitPod("svc", "Running and Ready", 120*time.Second, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && podReady(p)
	})
	// the pod's IP is its shadow Service's until the shadow pod runs, then
	// the shadow pod's: the client starts once it is the latter
	e.waitTunnel("svc", corev1.ConditionTrue, "")
	_, pods, err := net.ParseCIDR(e.rig.Get(t, "RIG_K8S_POD_CIDR"))
	if err != nil {
		t.Fatalf("RIG_K8S_POD_CIDR: %v", err)
	}
	running := e.waitPod("svc", "the shadow pod's IP", 60*time.Second, func(p *corev1.Pod) bool {
		return pods.Contains(net.ParseIP(p.Status.PodIP))
	})
	first, ip := jobID(running), running.Status.PodIP
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	e.waitFor("the service at the pod's IP "+addr, 60*time.Second, func() bool {
		_, err := httpGet(addr, "/hosts")
		return err == nil
	})
	t.Logf("%v: Slurm job %s serves at the pod's IP %s", since(), first, addr)

	c := &renewClient{addr: addr, every: 100 * time.Millisecond}
	stop := c.start()
	e.waitFor("SuccessorSubmitted", time.Duration(limit)*time.Second, func() bool { return hasEvent(e.events(created), "SuccessorSubmitted") })
	t.Logf("%v: successor submitted", since())
	e.waitFor("SuccessorReady", 60*time.Second, func() bool { return hasEvent(e.events(created), "SuccessorReady") })
	t.Logf("%v: successor ready", since())
	e.waitFor("HandedOver", 60*time.Second, func() bool { return hasEvent(e.events(created), "HandedOver") })
	t.Logf("%v: handed over", since())
	time.Sleep(5 * time.Second) // the new job serving alone
	stop()

	sent, failed, gap, lastErr := c.result()
	t.Logf("requests through the pod's IP during the renewal: %d sent, %d failed, longest gap between two answers %v (last error: %v)", sent, failed, gap, lastErr)
	for _, ev := range e.events(created) {
		t.Logf("event %s", ev)
	}
	if _, err := httpGet(addr, "/hosts"); err != nil {
		t.Errorf("after the handover, the pod's IP %s: %v; want the new job's answer", addr, err)
	}
	cur, err := e.client.CoreV1().Pods(e.ns).Get(ctx, "svc", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod: %v", err)
	}
	if cur.Status.Phase != corev1.PodRunning || !podReady(cur) || cur.Status.PodIP != ip {
		t.Errorf("after the handover: phase %s, ready %v, IP %s; want Running, Ready, %s", cur.Status.Phase, podReady(cur), cur.Status.PodIP, ip)
	}
	cond := podCondition(cur, "sluice.io/CurrentJob")
	if cond == nil || cond.Reason != "Renewal1" || strings.Contains(cond.Message, "job "+first+",") {
		t.Errorf("CurrentJob condition %+v; want Renewal1 naming the successor", cond)
	}
	old := e.squeue(string(created.UID))
	// SIGTERM ends the batch script before scancel does: FAILED or CANCELLED
	if len(old) != 1 || !strings.HasSuffix(old[0], "_CANCELLED") && !strings.HasSuffix(old[0], "_FAILED") {
		t.Errorf("the first job in squeue: %q; want it ended", old)
	}
	succ := e.squeue(string(created.UID) + "-r1")
	if len(succ) != 1 || !strings.HasSuffix(succ[0], "_RUNNING") {
		t.Errorf("the successor in squeue: %q; want it RUNNING", succ)
	}
	t.Logf("%v: jobs %q then %q; %s", since(), old, succ, cond.Message)
}

func hasEvent(events []string, reason string) bool {
	for _, ev := range events {
		if strings.HasPrefix(ev, reason+":") {
			return true
		}
	}
	return false
}

// renewClient sends one GET every interval and counts the answers.
type renewClient struct {
	addr  string
	every time.Duration

	mu       sync.Mutex
	sent     int
	failed   int
	lastOK   time.Time
	gap      time.Duration
	lastErr  error
	finished chan struct{}
}

// start runs the client until the returned stop is called.
func (c *renewClient) start() (stop func()) {
	done := make(chan struct{})
	c.finished = make(chan struct{})
	c.lastOK = time.Now()
	go func() {
		defer close(c.finished)
		tick := time.NewTicker(c.every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			_, err := httpGet(c.addr, "/hosts")
			now := time.Now()
			c.mu.Lock()
			c.sent++
			if err != nil {
				c.failed++
				c.lastErr = err
			} else {
				c.gap = max(c.gap, now.Sub(c.lastOK))
				c.lastOK = now
			}
			c.mu.Unlock()
		}
	}()
	return func() {
		close(done)
		<-c.finished
	}
}

func (c *renewClient) result() (sent, failed int, gap time.Duration, lastErr error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent, c.failed, c.gap, c.lastErr
}

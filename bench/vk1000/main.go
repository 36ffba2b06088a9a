//go:build bench

// Command vk1000 is the 1,000-pod benchmark of sluice-vk (issue 3). It runs
// the virtual kubelet in-process (internal/vk.Run) against the rig's real
// API server, with the real slurm.Client over a site in memory that counts
// the commands it runs (the rig's one 4-CPU node cannot hold 1,000 sleep
// jobs), and measures, as pods are added to the node (10, 100, 1,000):
// the Slurm calls per status poll, the process's memory, and the lag from a
// job's end to its pod's phase Succeeded in the API server.
//
//	go run -tags bench ./bench/vk1000 [-pods 10,100,1000] [-poll 2s] [-sample 100]
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/provider"
	"github.com/sluice-hpc/sluice/internal/rigenv"
	"github.com/sluice-hpc/sluice/internal/vk"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const dataRoot = "/bench/alice/.sluice"

type options struct {
	kubeconfig string
	steps      []int
	poll       time.Duration
	sample     int
	creators   int
	qps        float64
	windows    int
	settle     time.Duration
	standby    string
	cpuProfile string
	memProfile string
}

func main() {
	var o options
	var steps string
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the API server; if empty, RIG_KUBECONFIG of the rig")
	flag.StringVar(&steps, "pods", "10,100,1000", "pod counts to measure at, increasing")
	flag.DurationVar(&o.poll, "poll", 2*time.Second, "the virtual kubelet's Site.PollInterval")
	flag.IntVar(&o.sample, "sample", 100, "pods whose jobs are ended to measure the status lag")
	flag.IntVar(&o.creators, "creators", 8, "concurrent pod creators")
	flag.Float64Var(&o.qps, "vk-qps", 100, "the virtual kubelet's Kubernetes client QPS (burst twice that); 0 for vk.Run's default (50, burst 100)")
	flag.IntVar(&o.windows, "polls", 5, "polls measured at each pod count")
	flag.DurationVar(&o.settle, "settle", 0, "wait this long after the last count's polls before ending jobs")
	flag.StringVar(&o.standby, "standby", "", "a sluice-vk binary to run as a standby replica (--leader-elect) for the node, its RSS measured beside")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the process, from the first create to the last status lag, to this file")
	flag.StringVar(&o.memProfile, "memprofile", "", "write a heap profile, taken with the last count's pods Running, to this file")
	flag.Parse()
	for _, s := range strings.Split(steps, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 || len(o.steps) > 0 && n <= o.steps[len(o.steps)-1] {
			fmt.Fprintf(os.Stderr, "vk1000: -pods: %q is not an increasing list of counts\n", steps)
			os.Exit(2)
		}
		o.steps = append(o.steps, n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "vk1000:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if o.kubeconfig == "" {
		vars, err := rigenv.Read(rigenv.File())
		if err != nil || vars["RIG_KUBECONFIG"] == "" {
			return fmt.Errorf("no -kubeconfig and no RIG_KUBECONFIG in the rig's environment (%v)", err)
		}
		o.kubeconfig = vars["RIG_KUBECONFIG"]
	}
	rc, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	rc.QPS, rc.Burst = 200, 400
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := fmt.Sprintf("vk1000-%x", b)
	cfg, err := config.Parse(nodeConfig(name, o.poll, max(1000, o.steps[len(o.steps)-1])))
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}

	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace: %w", err)
	}
	fmt.Fprintf(os.Stderr, "vk1000: namespace and node %s\n", name)
	var sb *standby
	if o.standby != "" {
		if sb, err = startStandby(ctx, client, o.standby, o.kubeconfig, name, o.poll); err != nil {
			return err
		}
		defer func() {
			if err := sb.stop(); err != nil {
				fmt.Fprintln(os.Stderr, "vk1000:", err)
			}
		}()
	}
	site := newFakeSite(dataRoot, "node1")
	_ = site.MkdirAll(ctx, dataRoot, 0o700)
	jobs := &countingJobs{site: site}
	logFile, err := os.CreateTemp("", name+"-*.log")
	if err != nil {
		return fmt.Errorf("virtual kubelet log: %w", err)
	}
	defer logFile.Close()
	fmt.Fprintf(os.Stderr, "vk1000: the virtual kubelet logs to %s\n", logFile.Name())
	log := slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo}))

	vkCtx, stopVK := context.WithCancel(context.WithoutCancel(ctx))
	vkDone := make(chan error, 1)
	go func() {
		vkDone <- vk.Run(vkCtx, cfg, vk.Options{
			Kubeconfig: o.kubeconfig, Logger: log, QPS: float32(o.qps), Burst: int(2 * o.qps),
			Runner:   site,
			WrapJobs: func(j provider.Jobs) provider.Jobs { jobs.Jobs = j; return jobs },
		})
	}()
	trk := newTracker()
	trkCtx, stopTrk := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		if err := trk.run(trkCtx, client, name); err != nil {
			fmt.Fprintln(os.Stderr, "vk1000:", err)
		}
	}()
	bg := context.WithoutCancel(ctx)
	defer func() {
		timeout := 3*time.Minute + time.Duration(o.steps[len(o.steps)-1])*50*time.Millisecond
		if err := cleanupPods(bg, client, trk, name, timeout); err != nil {
			fmt.Fprintln(os.Stderr, "vk1000: cleanup:", err)
		}
		stopVK()
		if err := <-vkDone; err != nil {
			fmt.Fprintln(os.Stderr, "vk1000: sluice-vk:", err)
		}
		stopTrk()
		if err := forceCleanup(bg, client, name, name); err != nil {
			fmt.Fprintln(os.Stderr, "vk1000: cleanup:", err)
		}
	}()

	res, err := measure(ctx, o, client, name, site, jobs, trk, sb)
	if res != nil {
		res.print(os.Stdout, o)
	}
	return err
}

// nodeConfig is the configuration file of the benchmark's virtual node,
// on the site in memory.
func nodeConfig(name string, poll time.Duration, pods int) []byte {
	return []byte(fmt.Sprintf(`NodeName: %s
Site:
  Access: local
  DataRoot: %s
  ContainerRuntime: none
  PollInterval: %s
Node:
  InternalIP: 127.0.0.1
  # set, so that the fake site is never asked for its capacity (sinfo)
  CPU: "100"
  Memory: 256Gi
  GPUs: "0"
  Pods: "%d"
  KubeletAPI:
    Listen: 127.0.0.1:0
    # nothing asks for logs: no CertificateSigningRequest to approve
    Certificate: self-signed
`, name, dataRoot, poll, pods))
}

// measure runs the benchmark proper on a fresh node and namespace.
func measure(ctx context.Context, o options, client kubernetes.Interface, name string, site *fakeSite, jobs *countingJobs, trk *tracker, sb *standby) (res *results, err error) {
	if err := waitNode(ctx, client, name); err != nil {
		return nil, err
	}
	if err := waitSA(ctx, client, name); err != nil {
		return nil, err
	}
	res = &results{}
	if !sleepCtx(ctx, 2*o.poll) {
		return nil, ctx.Err()
	}
	res.idle = readMem(site, sb)
	if o.cpuProfile != "" {
		stopProfile, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			return nil, err
		}
		defer stopProfile()
	}

	have := 0
	for _, n := range o.steps {
		start := time.Now()
		stopProgress := progress(ctx, trk, have, n)
		modifiedBefore := trk.modifiedPods()
		if err := createPods(ctx, client, trk, name, name, have, n, o.creators); err != nil {
			stopProgress()
			return res, err
		}
		created := time.Since(start)
		want := n
		// at least 4 minutes, and 10 pods a second
		timeout := max(4*time.Minute, time.Duration(n-have)*100*time.Millisecond)
		err := trk.waitFor(ctx, fmt.Sprintf("%d pods Running", n), timeout, func() bool {
			return trk.countPhase(corev1.PodRunning) >= want
		})
		stopProgress()
		if err != nil {
			return res, err
		}
		running := time.Since(start)
		writes := trk.modifiedPods() - modifiedBefore
		events, err := eventsByReason(ctx, client, name)
		if err != nil {
			return res, err
		}
		from := time.Now()
		if !sleepCtx(ctx, time.Duration(o.windows)*o.poll) {
			return res, ctx.Err()
		}
		res.steps = append(res.steps, stepResult{pods: n, created: created, running: running,
			window: time.Since(from), polls: jobs.since(from), ramp: trk.rampOf(have, n), mem: readMem(site, sb),
			longestFind: site.longestLine("find"), podWrites: writes, events: events})
		have = n
		fmt.Fprintf(os.Stderr, "vk1000: %s: %d pods created in %v, Running %v after the first create\n",
			time.Now().Format(time.TimeOnly), n, created.Round(time.Millisecond), running.Round(time.Millisecond))
	}
	res.loaded = res.steps[len(res.steps)-1].mem
	if o.memProfile != "" {
		if err := writeHeapProfile(o.memProfile); err != nil {
			return res, err
		}
	}
	if !sleepCtx(ctx, o.settle) {
		return res, ctx.Err()
	}
	fmt.Fprintf(os.Stderr, "vk1000: %s: ending %d jobs\n", time.Now().Format(time.TimeOnly), o.sample)

	res.lags, err = statusLag(ctx, o, site, jobs, trk)
	return res, err
}

// statusLag ends the jobs of a sample of pods, spread over the pod list, at
// random moments of two poll intervals, and times each until the watch
// shows its pod Succeeded.
func statusLag(ctx context.Context, o options, site *fakeSite, jobs *countingJobs, trk *tracker) ([]lag, error) {
	total := o.steps[len(o.steps)-1]
	n := min(o.sample, total)
	names := make([]string, n)
	uids := make([]string, n)
	trk.mu.Lock()
	for i := range n {
		names[i] = podName(i * total / n)
		uids[i] = trk.uid[names[i]]
	}
	trk.mu.Unlock()
	ended := make([]time.Time, n)
	errc := make(chan error, n)
	for i := range n {
		delay := time.Duration(randUint64() % uint64(2*o.poll))
		go func() {
			if !sleepCtx(ctx, delay) {
				errc <- ctx.Err()
				return
			}
			t, err := site.complete(uids[i])
			ended[i] = t
			errc <- err
		}()
	}
	for range n {
		if err := <-errc; err != nil {
			return nil, err
		}
	}
	if err := trk.waitFor(ctx, "the sample's pods Succeeded", 10*o.poll+30*time.Second, func() bool {
		for _, nm := range names {
			if _, ok := trk.succeeded[nm]; !ok {
				return false
			}
		}
		return true
	}); err != nil {
		return nil, err
	}
	trk.mu.Lock()
	defer trk.mu.Unlock()
	lags := make([]lag, n)
	for i, nm := range names {
		lags[i].total = trk.succeeded[nm].Sub(ended[i])
		if seen, ok := jobs.endSeen(uids[i]); ok {
			lags[i].poll = seen.Sub(ended[i])
			lags[i].push = trk.succeeded[nm].Sub(seen)
		}
	}
	return lags, nil
}

func randUint64() uint64 {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v
}

// sleepCtx waits d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// waitNode waits for the node to be Ready and its site reachable.
func waitNode(ctx context.Context, c kubernetes.Interface, name string) error {
	return pollUntil(ctx, "the node to be Ready", time.Minute, func() bool {
		n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		ok := 0
		for _, cond := range n.Status.Conditions {
			if (cond.Type == corev1.NodeReady || cond.Type == provider.ConditionSiteReachable) && cond.Status == corev1.ConditionTrue {
				ok++
			}
		}
		return ok == 2
	})
}

// waitSA waits for the namespace's default service account, which pod
// admission needs.
func waitSA(ctx context.Context, c kubernetes.Interface, ns string) error {
	return pollUntil(ctx, "the default service account", time.Minute, func() bool {
		_, err := c.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
}

func pollUntil(ctx context.Context, what string, timeout time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}

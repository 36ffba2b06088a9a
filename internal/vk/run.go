// Package vk assembles the virtual kubelet sluice-vk: the Kubernetes
// client, the site connection and Slurm client, the provider, the
// virtual-kubelet pod and node controllers (with node leases), the event
// broadcaster, and the kubelet API that serves logs.
package vk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/kubeconfig"
	"github.com/sluice-hpc/sluice/internal/provider"
	"github.com/sluice-hpc/sluice/internal/site"
	"github.com/sluice-hpc/sluice/internal/slurm"
	"github.com/sluice-hpc/sluice/internal/vkslog"
	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// Options are the virtual kubelet's command-line settings.
type Options struct {
	// Kubeconfig is the kubeconfig file. If empty, the in-cluster
	// configuration is used.
	Kubeconfig string
	// Logger. If nil, slog.Default().
	Logger *slog.Logger
	// Workers is the number of pod controller workers. If zero, 4.
	Workers int
	// QPS and Burst bound the Kubernetes client's requests. If zero, 50 and
	// 100: client-go's own defaults (5 and 10) would take minutes to push
	// the status of a node with a thousand pods.
	QPS   float32
	Burst int
	// Runner reaches the site. If nil, site.Open(cfg). Benchmarks set it to
	// a site in memory.
	Runner site.Runner
	// WrapJobs, if set, wraps the Slurm client the provider uses (a
	// benchmark counts the calls).
	WrapJobs func(provider.Jobs) provider.Jobs
	// Namespace is the virtual kubelet's own namespace, where the
	// credentials that shadows copy live. If empty, default.
	Namespace string
	// RelayBinary is the sluice-relay binary placed on the site for jobs
	// with a reverse tunnel; it must be built for the site's machine. If
	// empty, the relay for the site's machine beside the executable
	// (relaybin.Find).
	RelayBinary string
	// PublishKeySecret, on a node confined to a tenant namespace, writes
	// the key Secret the shadows mount in the tenant namespace from
	// Network.SSH.KeyFile (shadow.Spec.KeyFile).
	PublishKeySecret bool
	// Health is told how the node and the election fare, for /healthz and
	// /readyz (ServeHealth). If nil, nothing is told.
	Health *Health

	// metrics is the metrics server RunElected made before the election,
	// so that standbys serve metrics too; if nil, Run makes its own.
	metrics *metricsServer
}

// informerResync is how often the pod informer resyncs.
const informerResync = time.Minute

// Run runs the virtual node until ctx ends.
func Run(ctx context.Context, cfg *config.Config, opts Options) error {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	ctx = vkslog.WithContext(ctx, log)
	vklog.L = vkslog.New(log.With("component", "virtual-kubelet"))

	rc, err := kubeconfig.Load(opts.Kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = opts.QPS, opts.Burst
	if rc.QPS == 0 {
		rc.QPS = 50
	}
	if rc.Burst == 0 {
		rc.Burst = 100
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	siteOpts, err := jobscript.NewSiteOptions(cfg.Site)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	runner := opts.Runner
	if runner == nil {
		if runner, err = site.Open(cfg, log); err != nil {
			return err
		}
		if c, ok := runner.(io.Closer); ok {
			defer c.Close()
		}
	}
	slurmClient := &slurm.Client{
		Site: runner, DataRoot: cfg.Site.DataRoot,
		Runtime: jobscript.Runtime(cfg.Site.ContainerRuntime), SiteOptions: siteOpts, Logger: log,
	}
	var jobs provider.Jobs = slurmClient
	if opts.WrapJobs != nil {
		jobs = opts.WrapJobs(jobs)
	}

	ln, err := net.Listen("tcp", cfg.Node.KubeletAPI.Listen)
	if err != nil {
		return fmt.Errorf("kubelet API: %w", err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	nodeObj, err := provider.NewNode(cfg.NodeName, cfg.Node, int32(port), time.Now())
	if err != nil {
		return err
	}
	machine := describeSite(ctx, log, runner, slurmClient.Runtime, siteOpts, nodeObj)
	siteOpts.Sbatch = learnSbatch(ctx, log, slurmClient, nodeObj)
	slurmClient.SiteOptions.Sbatch = siteOpts.Sbatch

	eb := record.NewBroadcaster(record.WithContext(ctx))
	defer eb.Shutdown()
	eb.StartRecordingToSink(&corev1client.EventSinkImpl{Interface: client.CoreV1().Events(corev1.NamespaceAll)})
	recorder := eb.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "sluice-vk", Host: cfg.NodeName})

	podInformers := informers.NewSharedInformerFactoryWithOptions(client, informerResync, nodeutil.PodInformerFilter(cfg.NodeName),
		informers.WithTransform(dropManagedFields))
	// The pod controller needs these informers, but with downward-API
	// resolution left to the provider it never reads them: they are never
	// started, so the node needs no cluster-wide rights on Secrets; on a
	// confined node they would list its tenant namespace only.
	others := informers.NewSharedInformerFactoryWithOptions(client, informerResync, informers.WithNamespace(cfg.Network.TenantNamespace))
	podInformer := podInformers.Core().V1().Pods()

	ms, serveMetrics := opts.metrics, false
	if ms == nil && cfg.Node.MetricsListen != "" {
		if ms, err = newMetricsServer(cfg.Node.MetricsListen, log); err != nil {
			return err
		}
		defer ms.ln.Close()
		serveMetrics = true
	}
	var reg prometheus.Registerer
	if ms != nil {
		reg = ms.reg
	}
	shadowManager, err := shadows(cfg, opts, client, recorder, log)
	if err != nil {
		return err
	}
	relay := relayPlacer(opts, slurmClient, runner, machine)
	prov, err := provider.New(provider.Config{
		Shadows: shadowManager, Relay: relay, SocketDirRoot: cfg.Site.SocketDirRoot,
		NodeName: cfg.NodeName, Jobs: jobs, Runtime: slurmClient.Runtime, Site: siteOpts,
		Client: client, Pods: podInformer.Lister(), Recorder: recorder,
		InternalIP: cfg.Node.InternalIP, PollInterval: cfg.Site.PollInterval,
		TenantNamespace: cfg.Network.TenantNamespace, RefuseForeignPods: cfg.Network.RefuseForeignPods,
		Reverse: annotations.SiteRules{
			ReverseEnabled: cfg.Network.SSH.Reverse.Enabled,
			ShadowModeSSH:  cfg.Network.ShadowMode == "ssh",
			TunnelEnabled:  cfg.Network.EnableTunnel,
			AllowSocks:     cfg.Network.SSH.Reverse.AllowSocks,
		},
		MaxLogFollowers:             cfg.Node.KubeletAPI.MaxLogFollowersPerNode,
		MaxLogFollowersPerNamespace: cfg.Node.KubeletAPI.MaxLogFollowersPerNamespace,
		Metrics:                     reg,
		Usage:                       slurmClient,
		StatsInterval:               cfg.Node.StatsInterval,
		Logger:                      log,
	})
	if err != nil {
		return err
	}
	pc, err := node.NewPodController(node.PodControllerConfig{
		PodClient: client.CoreV1(), PodInformer: podInformer, EventRecorder: recorder, Provider: prov,
		ConfigMapInformer: others.Core().V1().ConfigMaps(), SecretInformer: others.Core().V1().Secrets(),
		ServiceInformer: others.Core().V1().Services(), SkipDownwardAPIResolution: true,
		SyncPodsFromKubernetesRateLimiter:    queueLimiter(),
		SyncPodStatusFromProviderRateLimiter: queueLimiter(),
		DeletePodsFromKubernetesRateLimiter:  queueLimiter(),
	})
	if err != nil {
		return fmt.Errorf("pod controller: %w", err)
	}
	status := &provider.NodeStatus{
		Node: nodeObj.DeepCopy(), Check: healthCheck(runner), Logger: log,
		Capacity: siteCapacity(cfg.Node, slurmClient), CapacityInterval: cfg.Node.CapacityInterval,
	}
	status.RefreshCapacity(ctx) // the node registers with the site's capacity
	if h := cfg.Network.SSH; h.CertificateFile != "" && usesCertificate(cfg, opts) {
		status.Certificate = certificateCheck(h.CertificateFile, h.CertificateWarnBefore)
		status.Recorder = recorder
	}
	if cfg.Network.SSH.Auth == "kerberos" {
		status.Recorder = recorder // a login failing for want of a ticket is a Warning Event
	}
	if ms != nil {
		if err := ms.registerNode(status); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		if ssh, ok := runner.(*site.SSH); ok {
			if err := ms.reg.Register(sshCollector{ssh}); err != nil {
				return fmt.Errorf("metrics: %w", err)
			}
		}
		if f := cfg.Network.SSH.CertificateFile; f != "" && usesCertificate(cfg, opts) {
			if err := ms.registerCertificate(f); err != nil {
				return fmt.Errorf("metrics: %w", err)
			}
		}
	}
	nc, err := node.NewNodeController(status, status.Node.DeepCopy(), client.CoreV1().Nodes(),
		node.WithNodeEnableLeaseV1(nodeutil.NodeLeaseV1Client(client), node.DefaultLeaseDuration))
	if err != nil {
		return fmt.Errorf("node controller: %w", err)
	}
	api, err := kubeletAPI(ctx, log, cfg, rc, client, recorder, prov, podInformer.Lister(), relay)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 4)
	opts.Health.nodeStarted(podInformer.Informer().HasSynced, nc.Ready(), commandsOf(runner))
	podInformers.Start(ctx.Done())
	if serveMetrics {
		go ms.serve(ctx)
	}
	go func() { done <- prov.Run(ctx) }()
	go func() { status.Run(ctx); done <- nil }()
	go func() { done <- api.serve(ctx, ln) }()
	go func() { done <- pc.Run(ctx, opts.Workers) }()
	select {
	case <-pc.Ready():
	case <-pc.Done():
		return fmt.Errorf("pod controller: %w", pc.Err())
	case <-ctx.Done():
		return waitAll(done, 4, nil)
	}
	go nc.Run(ctx) //nolint:errcheck // its error is read from nc.Err
	log.Info("sluice-vk: node running", "node", cfg.NodeName, "kubelet_api", ln.Addr().String(), "site", cfg.Network.SSH.LoginHost)

	var first error
	select {
	case <-ctx.Done():
	case <-nc.Done():
		first = fmt.Errorf("node controller: %w", nc.Err())
	case err := <-done:
		first = err
		if first == nil {
			first = errors.New("sluice-vk: a component stopped")
		}
		done <- nil // counted below
	}
	cancel()
	<-nc.Done()
	return waitAll(done, 4, first)
}

// waitAll waits for n results on done and returns first, else the first
// error other than a cancellation.
func waitAll(done chan error, n int, first error) error {
	for range n {
		if err := <-done; first == nil && err != nil && !errors.Is(err, context.Canceled) {
			first = err
		}
	}
	return first
}

// healthCheck is the site's health check: one keepalive round trip on the
// SSH connection; a local site is always reachable.
func healthCheck(r site.Runner) func(context.Context) error {
	if h, ok := r.(interface{ Healthy(context.Context) error }); ok {
		return h.Healthy
	}
	return nil
}

// commandsOf returns what lists the site commands r has in flight, or nil
// when r does not say.
func commandsOf(r site.Runner) func() []site.Command {
	if a, ok := r.(interface{ Activity() *site.Activity }); ok {
		return a.Activity().InFlight
	}
	return nil
}

// queueLimiter paces a work queue of the pod controller: each pod backs off
// on failures as with client-go's default limiter, and the queue as a whole
// takes 100 pods a second with bursts of 1,000 instead of the default 10
// (burst 100), which left a node of a thousand pods minutes behind.
func queueLimiter() workqueue.TypedRateLimiter[any] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[any](5*time.Millisecond, 1000*time.Second),
		&workqueue.TypedBucketRateLimiter[any]{Limiter: rate.NewLimiter(rate.Limit(100), 1000)},
	)
}

// Package provider is the virtual kubelet's provider: it runs the pods bound
// to the virtual node as Slurm jobs (SPEC S2), reports their status from one
// poll of all jobs, serves their logs, cancels their jobs when they are
// deleted, refuses the pods that cannot run (S6) and tells each pod's story
// in Events (S7). It implements the virtual-kubelet node.PodLifecycleHandler
// and node.PodNotifier interfaces.
package provider

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/slurm"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
)

// Jobs is the Slurm side of the provider; *slurm.Client implements it.
type Jobs interface {
	Submit(ctx context.Context, job *jobscript.Job) (slurm.JobID, error)
	// Submitted gives back the annotations a submitted job was made with
	// (Job.Annotations), nil when none were kept.
	Submitted(ctx context.Context, ref slurm.JobRef) (map[string]string, error)
	Status(ctx context.Context, refs []slurm.JobRef) (map[string]slurm.Status, error)
	Cancel(ctx context.Context, ref slurm.JobRef) error
	Remove(ctx context.Context, ref slurm.JobRef) error
	Logs(ctx context.Context, ref slurm.JobRef, container string, opts slurm.LogOptions) (io.ReadCloser, error)
	// EndLogs ends the followed logs of the job's containers (all of them
	// when none is named): the status poll saw them end.
	EndLogs(uid string, containers ...string)
	FailureMessage(ctx context.Context, ref slurm.JobRef) (string, error)
	Ref(namespace, uid string, id slurm.JobID) slurm.JobRef
}

var _ Jobs = (*slurm.Client)(nil)

// Config is what a Provider needs. NodeName, Jobs, Client, Pods and
// Recorder are required.
type Config struct {
	NodeName string
	Jobs     Jobs
	// Runtime is the site's container runtime (it decides which pods can run).
	Runtime jobscript.Runtime
	// Site holds the site's flavors and the rest of interLink's plugin keys
	// that shape a pod's job; the zero value has none.
	Site jobscript.SiteOptions
	// Client reads ConfigMaps and Secrets, requests service account tokens,
	// lists the node's pods at start-up and sets the job finalizer.
	Client kubernetes.Interface
	// Pods lists the pods bound to the node (the pod controller's informer).
	Pods corev1listers.PodLister
	// Recorder is the pod controller's event recorder.
	Recorder record.EventRecorder
	// InternalIP is the node's address, given to pods as hostIP and podIP.
	InternalIP string
	// PollInterval is how often the status of all jobs is read. If zero, 5s.
	PollInterval time.Duration
	// TenantNamespace and RefuseForeignPods confine the node (S3): with
	// both set, a pod of another namespace is refused.
	TenantNamespace   string
	RefuseForeignPods bool
	// Reverse is what the node can give a pod asking for a reverse tunnel
	// (S5); a pod asking for more is refused (S6).
	Reverse annotations.SiteRules
	// Shadows makes the cluster side of pods that expose ports or ask for
	// a reverse tunnel (S3). If nil, no shadow is made.
	Shadows Shadows
	// Relay places the relay binary on the site and returns its path there
	// (slurm.Client.PlaceRelay); needed by pods with a reverse tunnel.
	Relay func(ctx context.Context) (string, error)
	// SocketDirRoot is Site.SocketDirRoot, for the reverse tunnel's jobs.
	SocketDirRoot string
	// Metrics registers the provider's Prometheus metrics. If nil, none.
	Metrics prometheus.Registerer
	// Usage reads the running jobs' usage for StatsSummary and
	// MetricsResource. If nil, they answer an error.
	Usage UsageReader
	// StatsInterval is the shortest time between two reads of Usage;
	// stats asked for sooner are the last read's. If zero,
	// config.DefaultStatsInterval.
	StatsInterval time.Duration
	// SubmitWorkers bounds the submissions in flight. If zero, 4.
	SubmitWorkers int
	// SubmitTimeout bounds one submission attempt, so that a command that
	// hangs (an sbatch waiting on a slurmctld that does not answer) gives
	// its slot back; the attempt is then retried, and Submit adopts a job
	// that the cut-short sbatch did submit. If zero, 5 minutes.
	SubmitTimeout time.Duration
	// HandoverTimeout bounds the wait, once the shadow was told of a
	// successor job's node (sluice.io/renew-before), for its forward
	// tunnel to say it is up on that node (and, through a relay, on the
	// successor's socket directory); the old job is ended after it all the
	// same. If zero, 1m.
	HandoverTimeout time.Duration
	// TunnelPoll is the time between two reads of the tunnels' state while
	// a handover waits for them. If zero, 250ms.
	TunnelPoll time.Duration
	// Logger receives what the provider does not return. If nil, slog.Default().
	Logger *slog.Logger
	// Now tells the time. If nil, time.Now.
	Now func() time.Time
	// Backoff is the first retry delay of a failed submission or deletion,
	// doubled up to a minute. If zero, 1s.
	Backoff time.Duration
	// MaxLogFollowers and MaxLogFollowersPerNamespace bound the followed
	// logs open at once on the node and in one namespace; one more is
	// refused. If zero, DefaultMaxLogFollowers and
	// DefaultMaxLogFollowersPerNamespace.
	MaxLogFollowers             int
	MaxLogFollowersPerNamespace int
}

// Provider runs pods as Slurm jobs. Create it with New; call Run.
type Provider struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics

	// ctx is Run's context: background work (submissions, deletions) ends
	// with it. It is set before Run returns from its set-up.
	ctx     context.Context
	started chan struct{}
	submits chan struct{} // semaphore of submissions in flight

	follows followerCount

	usageSampler *usageSampler // nil without Config.Usage

	mu      sync.Mutex
	pods    map[string]*podState // by namespace/name
	notify  func(*corev1.Pod)
	stopped bool // Run is returning: no new background work
	wg      sync.WaitGroup
}

var (
	_ node.PodLifecycleHandler = (*Provider)(nil)
	_ node.PodNotifier         = (*Provider)(nil)
)

// New checks cfg and returns a provider.
func New(cfg Config) (*Provider, error) {
	switch {
	case cfg.NodeName == "":
		return nil, errdefs.InvalidInput("provider: no node name")
	case cfg.Jobs == nil:
		return nil, errdefs.InvalidInput("provider: no jobs client")
	case cfg.Client == nil:
		return nil, errdefs.InvalidInput("provider: no Kubernetes client")
	case cfg.Pods == nil:
		return nil, errdefs.InvalidInput("provider: no pod lister")
	case cfg.Recorder == nil:
		return nil, errdefs.InvalidInput("provider: no event recorder")
	}
	if err := cfg.Runtime.Validate(); err != nil {
		return nil, errdefs.AsInvalidInput(err)
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 5 * time.Second
	}
	if cfg.SubmitWorkers <= 0 {
		cfg.SubmitWorkers = 4
	}
	if cfg.SubmitTimeout <= 0 {
		cfg.SubmitTimeout = 5 * time.Minute
	}
	if cfg.HandoverTimeout <= 0 {
		cfg.HandoverTimeout = time.Minute
	}
	if cfg.TunnelPoll <= 0 {
		cfg.TunnelPoll = 250 * time.Millisecond
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.MaxLogFollowers <= 0 {
		cfg.MaxLogFollowers = DefaultMaxLogFollowers
	}
	if cfg.MaxLogFollowersPerNamespace <= 0 {
		cfg.MaxLogFollowersPerNamespace = DefaultMaxLogFollowersPerNamespace
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	p := &Provider{
		cfg:     cfg,
		log:     log,
		started: make(chan struct{}),
		submits: make(chan struct{}, cfg.SubmitWorkers),
		pods:    make(map[string]*podState),
	}
	if cfg.Usage != nil {
		p.usageSampler = newUsageSampler(cfg.Usage, cfg.StatsInterval, cfg.Now)
	}
	if cfg.Metrics != nil {
		m, err := newMetrics(cfg.Metrics, p)
		if err != nil {
			return nil, fmt.Errorf("provider: register metrics: %w", err)
		}
		p.metrics = m
	}
	return p, nil
}

// Run adopts the pods bound to the node (see Adopt), then polls the status
// of their jobs until ctx ends. Submissions and deletions started while it
// runs end with ctx too; Run waits for them before it returns. Pods created
// before Run starts wait for it.
func (p *Provider) Run(ctx context.Context) error {
	p.ctx = ctx
	close(p.started)
	defer func() {
		p.mu.Lock()
		p.stopped = true
		p.mu.Unlock()
		p.wg.Wait()
	}()
	if err := p.adopt(ctx); err != nil {
		return err
	}
	p.cleanOrphans(ctx)
	if p.cfg.Shadows != nil {
		p.background(p.shadowLoop)
	}
	p.pollLoop(ctx)
	return nil
}

// NotifyPods registers the callback that receives every status change.
func (p *Provider) NotifyPods(_ context.Context, cb func(*corev1.Pod)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notify = cb
}

// push sends the pod of st, as it stands, to the pod controller. The caller
// must not hold p.mu.
//
// The pod controller writes the whole pod through the status subresource,
// which for pods also takes metadata such as finalizers: the pod's metadata
// is taken from the pod controller's cache first, with the job finalizer
// kept while the provider holds it, so that nothing set by others, or by
// the provider, is undone by a stale copy.
func (p *Provider) push(st *podState) {
	p.mu.Lock()
	cb := p.notify
	pod := st.pod.DeepCopy()
	fin := st.finalizer
	p.mu.Unlock()
	if cur, err := p.cfg.Pods.Pods(pod.Namespace).Get(pod.Name); err == nil && cur.UID == pod.UID {
		pod.ObjectMeta = *cur.ObjectMeta.DeepCopy()
	}
	if fin && !hasFinalizer(pod) {
		pod.Finalizers = append(pod.Finalizers, Finalizer)
	}
	if !fin {
		pod.Finalizers = slices.DeleteFunc(pod.Finalizers, func(f string) bool { return f == Finalizer })
	}
	if cb != nil {
		cb(pod)
	}
}

// background runs fn in a goroutine that Run waits for, once Run has
// started. Once Run is returning, fn is not run.
func (p *Provider) background(fn func(ctx context.Context)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		<-p.started
		fn(p.ctx)
	}()
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool { return sleepOr(ctx, d, nil) }

// sleepOr is sleep cut short by a value on wake (never, if wake is nil);
// it reports false only when ctx ends.
func sleepOr(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	case <-wake:
	}
	return true
}

// backoff is the delay before retry n (0-based): Backoff doubled, at most a minute.
func (p *Provider) backoff(n int) time.Duration {
	d := p.cfg.Backoff
	for i := 0; i < n && d < time.Minute; i++ {
		d *= 2
	}
	return min(d, time.Minute)
}

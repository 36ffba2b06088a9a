package hostnode

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
)

// providerConfig is what the pod runtime needs; every field is required
// unless it says otherwise.
type providerConfig struct {
	NodeName string
	HostIP   netip.Addr
	// Images maps an image to the host binary that stands for it.
	Images map[string]string
	// PodsDir holds a directory per pod, named by its UID.
	PodsDir string
	// InitPath is the binary that runs as the init helper (InitMain).
	InitPath string
	// MaxBackoff caps the wait before a container restarts.
	MaxBackoff time.Duration
	Objects    objectSource
	Tokens     tokenSource
	Recorder   record.EventRecorder
	// Services lists the Services for the pods' hosts files.
	Services func() []serviceHost
	// RemovePod removes a deleted pod from the API server once its
	// processes ended (delete with grace 0, if the UID is still uid), as a
	// kubelet does. If nil, the pod controller removes it when its grace
	// period is over.
	RemovePod func(ctx context.Context, namespace, name string, uid types.UID) error
	Log       *slog.Logger
}

// provider runs the pods bound to the host node as host processes; it is
// the virtual-kubelet provider of the node.
type provider struct {
	cfg  providerConfig
	base context.Context // the node's lifetime; each pod's context derives from it
	ips  podIPs

	mu       sync.Mutex
	pods     map[string]*podRun // namespace/name
	notify   func(*corev1.Pod)
	stopping bool
	wg       sync.WaitGroup
}

var (
	_ node.PodLifecycleHandler = (*provider)(nil)
	_ node.PodNotifier         = (*provider)(nil)
)

func newProvider(ctx context.Context, cfg providerConfig) *provider {
	return &provider{cfg: cfg, base: ctx, pods: map[string]*podRun{}}
}

func podKey(namespace, name string) string { return namespace + "/" + name }

// CreatePod starts running the pod.
func (p *provider) CreatePod(_ context.Context, pod *corev1.Pod) error {
	key := podKey(pod.Namespace, pod.Name)
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, ok := p.pods[key]; ok {
		if r.uid == pod.UID {
			return nil
		}
		return fmt.Errorf("create pod %s: its previous incarnation (uid %s) is still stopping", key, r.uid)
	}
	if p.stopping {
		return fmt.Errorf("create pod %s: the host node is stopping", key)
	}
	r := newPodRun(p, pod.DeepCopy())
	p.pods[key] = r
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		r.run()
	}()
	return nil
}

// UpdatePod takes the pod's new labels and annotations (for Service
// selectors and downward-API files); the host node changes nothing else of
// a running pod.
func (p *provider) UpdatePod(_ context.Context, pod *corev1.Pod) error {
	p.mu.Lock()
	r, ok := p.pods[podKey(pod.Namespace, pod.Name)]
	if ok && r.uid == pod.UID {
		r.pod.Labels, r.pod.Annotations = pod.Labels, pod.Annotations
	}
	p.mu.Unlock()
	if !ok {
		return errdefs.NotFoundf("pod %s/%s is not on this node", pod.Namespace, pod.Name)
	}
	r.kick()
	return nil
}

// DeletePod stops the pod's processes: SIGTERM, then SIGKILL after the
// grace period. It returns at once; the pod's terminal status follows
// through NotifyPods.
func (p *provider) DeletePod(_ context.Context, pod *corev1.Pod) error {
	p.mu.Lock()
	r, ok := p.pods[podKey(pod.Namespace, pod.Name)]
	if ok && r.uid != pod.UID {
		ok = false
	}
	if ok && !r.deleting {
		r.deleting = true
		r.grace = gracePeriod(pod)
		now := time.Now()
		r.pod.DeletionTimestamp = pod.DeletionTimestamp
		if r.pod.DeletionTimestamp == nil {
			r.pod.DeletionTimestamp = timePtr(now)
		}
		r.pod.DeletionGracePeriodSeconds = pod.DeletionGracePeriodSeconds
	}
	p.mu.Unlock()
	if !ok {
		return errdefs.NotFoundf("pod %s/%s is not on this node", pod.Namespace, pod.Name)
	}
	r.cancel()
	return nil
}

// gracePeriod is how long a deleted pod's processes get after SIGTERM.
func gracePeriod(pod *corev1.Pod) time.Duration {
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return 30 * time.Second
}

// GetPod returns the pod with its current status.
func (p *provider) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.pods[podKey(namespace, name)]
	if !ok {
		return nil, errdefs.NotFoundf("pod %s/%s is not on this node", namespace, name)
	}
	return r.snapshot(), nil
}

// GetPodStatus returns the pod's current status.
func (p *provider) GetPodStatus(ctx context.Context, namespace, name string) (*corev1.PodStatus, error) {
	pod, err := p.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

// GetPods returns every pod of the node.
func (p *provider) GetPods(context.Context) ([]*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(p.pods))
	for _, r := range p.pods {
		out = append(out, r.snapshot())
	}
	return out, nil
}

// NotifyPods registers the callback that takes status changes.
func (p *provider) NotifyPods(_ context.Context, cb func(*corev1.Pod)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notify = cb
}

// push sends the pod's current status to the pod controller.
func (p *provider) push(r *podRun) {
	p.mu.Lock()
	cb := p.notify
	pod := r.snapshot()
	p.mu.Unlock()
	if cb != nil {
		cb(pod)
	}
}

// remove forgets a pod once its processes ended and its files are gone.
func (p *provider) remove(r *podRun) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pods[r.key] == r {
		delete(p.pods, r.key)
	}
}

// GetContainerLogs serves a container's output, as `kubectl logs` asks.
func (p *provider) GetContainerLogs(ctx context.Context, namespace, name, container string, o api.ContainerLogOpts) (io.ReadCloser, error) {
	p.mu.Lock()
	r, ok := p.pods[podKey(namespace, name)]
	var run *logRun
	found := false
	if ok {
		for _, cs := range slices.Concat(r.inits, r.ctrs) {
			if cs.name == container {
				found = true
				run = cs.cur
				if o.Previous {
					run = cs.prev
				}
			}
		}
	}
	p.mu.Unlock()
	switch {
	case !ok:
		return nil, errdefs.NotFoundf("pod %s/%s is not on this node", namespace, name)
	case !found:
		return nil, errdefs.NotFoundf("container %s is not in pod %s/%s", container, namespace, name)
	case run == nil && o.Previous:
		return nil, errdefs.InvalidInputf("previous terminated container %s in pod %s/%s not found", container, namespace, name)
	case run == nil:
		return nil, errdefs.InvalidInputf("container %s in pod %s/%s is waiting to start", container, namespace, name)
	}
	opts := logOptions{Tail: -1, Timestamps: o.Timestamps, Follow: o.Follow, LimitBytes: int64(o.LimitBytes)}
	if o.Tail > 0 {
		opts.Tail = o.Tail
	}
	switch {
	case o.SinceSeconds > 0:
		opts.Since = time.Now().Add(-time.Duration(o.SinceSeconds) * time.Second)
	case !o.SinceTime.IsZero():
		opts.Since = o.SinceTime
	}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		defer cancel()
		pw.CloseWithError(streamLog(ctx, run.path, run.done, opts, pw))
	}()
	return &cancelReader{ReadCloser: pr, cancel: cancel}, nil
}

// cancelReader ends the log stream when the reader is closed.
type cancelReader struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelReader) Close() error {
	c.cancel()
	return c.ReadCloser.Close()
}

// objectChanged refreshes the volumes of the pods that read the
// ConfigMap or Secret (kind "ConfigMap" or "Secret") namespace/name.
func (p *provider) objectChanged(kind, namespace, name string) {
	p.mu.Lock()
	var kick []*podRun
	for _, r := range p.pods {
		if r.pod.Namespace != namespace {
			continue
		}
		for i := range r.pod.Spec.Volumes {
			if volumeReferences(&r.pod.Spec.Volumes[i], kind, name) {
				kick = append(kick, r)
				break
			}
		}
	}
	p.mu.Unlock()
	for _, r := range kick {
		r.kick()
	}
}

// servicesChanged rewrites every pod's hosts file.
func (p *provider) servicesChanged() {
	p.mu.Lock()
	all := make([]*podRun, 0, len(p.pods))
	for _, r := range p.pods {
		all = append(all, r)
	}
	p.mu.Unlock()
	for _, r := range all {
		r.kick()
	}
}

// shutdown stops every pod (2 s of grace at most) and waits for them.
func (p *provider) shutdown() {
	const maxGrace = 2 * time.Second
	p.mu.Lock()
	p.stopping = true
	for _, r := range p.pods {
		if !r.deleting || r.grace > maxGrace {
			r.grace = min(gracePeriod(r.pod), maxGrace)
		}
		r.shutdown = true
		r.cancel()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// image is the host binary for an image: the mapping given, else the
// mapping of the same image with ":latest" added or removed.
func (p *provider) image(image string) (string, bool) {
	if path, ok := p.cfg.Images[image]; ok {
		return path, true
	}
	if !hasTag(image) {
		path, ok := p.cfg.Images[image+":latest"]
		return path, ok
	}
	if base, ok := strings.CutSuffix(image, ":latest"); ok {
		path, ok := p.cfg.Images[base]
		return path, ok
	}
	return "", false
}

// hasTag tells whether an image reference names a tag or a digest.
func hasTag(image string) bool {
	if strings.Contains(image, "@") {
		return true
	}
	return strings.Contains(image[strings.LastIndex(image, "/")+1:], ":")
}

// podDir is the pod's directory on the host.
func (p *provider) podDir(uid string) string { return filepath.Join(p.cfg.PodsDir, uid) }

// cleanPodsDir removes what a previous run of the node left (its processes
// died with it).
func cleanPodsDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("pods directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("pods directory: %w", err)
	}
	return nil
}

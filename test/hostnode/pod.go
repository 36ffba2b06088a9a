package hostnode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podRun is one pod on the node, run by run() from creation to removal:
// its directory (volumes, hosts file, logs), its address, its init
// containers in order, then its containers side by side.
type podRun struct {
	p      *provider
	key    string
	uid    types.UID
	dir    string
	ref    *corev1.Pod // name, namespace and UID, for Events
	ctx    context.Context
	cancel context.CancelFunc
	// refresh asks for the volumes and the hosts file to be rewritten.
	refresh chan struct{}

	// guarded by p.mu
	pod         *corev1.Pod
	ip          netip.Addr
	startTime   *metav1.Time
	sandbox     bool
	failure     *podFailure
	mountErr    string
	initDone    bool
	inits, ctrs []*ctrState
	deleting    bool // deleted in Kubernetes
	shutdown    bool // the node stops
	grace       time.Duration
	conds       []corev1.PodCondition
}

// podFailure ends a pod the node cannot run.
type podFailure struct{ Reason, Message string }

func newPodRun(p *provider, pod *corev1.Pod) *podRun {
	ctx, cancel := context.WithCancel(p.base)
	r := &podRun{
		p: p, key: podKey(pod.Namespace, pod.Name), uid: pod.UID, dir: p.podDir(string(pod.UID)),
		ref: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID}},
		ctx: ctx, cancel: cancel, refresh: make(chan struct{}, 1), pod: pod,
	}
	r.ref.APIVersion, r.ref.Kind = "v1", "Pod"
	for _, c := range pod.Spec.InitContainers {
		r.inits = append(r.inits, &ctrState{name: c.Name, image: c.Image})
	}
	for _, c := range pod.Spec.Containers {
		r.ctrs = append(r.ctrs, &ctrState{name: c.Name, image: c.Image})
	}
	return r
}

// run runs the pod until it is deleted or the node stops.
func (r *podRun) run() {
	defer r.p.remove(r)
	refreshed := make(chan struct{})
	if err := r.prepare(); err != nil {
		r.refuse(err)
		close(refreshed)
	} else if r.mountVolumes() {
		go func() { defer close(refreshed); r.refreshLoop() }()
		if r.runInits() {
			r.runContainers()
		}
	} else {
		close(refreshed)
	}
	r.p.push(r)
	<-r.ctx.Done()
	<-refreshed
	r.finish()
	r.cleanup()
}

// prepare checks what the node can run, takes the pod's address and makes
// its directory.
func (r *podRun) prepare() error {
	pod := r.podCopy()
	if err := checkVolumes(pod); err != nil {
		return err
	}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			return fmt.Errorf("init container %s: sidecar containers (restartPolicy Always) are not supported by sluice-hostnode", c.Name)
		}
	}
	ip, err := r.p.ips.Take(string(r.uid))
	if err != nil {
		return err
	}
	for _, d := range []string{"volumes", "logs"} {
		if err := os.MkdirAll(filepath.Join(r.dir, d), 0o755); err != nil {
			return fmt.Errorf("pod directory: %w", err)
		}
	}
	r.p.mu.Lock()
	r.ip, r.sandbox, r.startTime = ip, true, timePtr(time.Now())
	r.p.mu.Unlock()
	r.p.push(r)
	return nil
}

// refuse fails the pod with the reason the node cannot run it.
func (r *podRun) refuse(err error) {
	r.p.mu.Lock()
	r.failure = &podFailure{Reason: "UnsupportedByHostNode", Message: err.Error()}
	r.p.mu.Unlock()
	r.event(corev1.EventTypeWarning, "Failed", "sluice-hostnode cannot run this pod: %v", err)
	r.p.cfg.Log.Warn("sluice-hostnode: pod refused", "pod", r.key, "error", err)
}

// mountVolumes writes the volumes and the hosts file, retrying (a
// ConfigMap may not exist yet) until it works or the pod ends.
func (r *podRun) mountVolumes() bool {
	bo := newBackoff(r.p.cfg.MaxBackoff)
	for {
		err := r.writeVolumes()
		r.p.mu.Lock()
		old := r.mountErr
		r.mountErr = ""
		if err != nil {
			r.mountErr = err.Error()
		}
		r.p.mu.Unlock()
		if err == nil {
			return true
		}
		if err.Error() != old {
			r.event(corev1.EventTypeWarning, "FailedMount", "MountVolume.SetUp failed: %v", err)
			r.p.push(r)
		}
		if !r.sleep(bo.step()) {
			return false
		}
	}
}

// writeVolumes makes the emptyDir and hostPath directories and writes the
// files of the other volumes and the hosts file.
func (r *podRun) writeVolumes() error {
	pod := r.podCopy()
	addrs := r.addrs()
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		dir := r.volumeDir(v)
		switch {
		case v.EmptyDir != nil:
			if err := os.MkdirAll(dir, 0o777); err != nil {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
			if err := os.Chmod(dir, 0o777); err != nil {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
		case v.HostPath != nil:
			if err := makeHostPath(v.HostPath); err != nil {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
		case hasFiles(v):
			files, err := buildVolumeFiles(r.ctx, r.p.cfg.Objects, r.p.cfg.Tokens, pod, v, addrs)
			if err != nil {
				return err
			}
			if _, err := writeVolumeDir(dir, files); err != nil {
				return err
			}
		}
	}
	return r.writeHosts()
}

// makeHostPath makes a hostPath volume's directory or file when its type
// asks for it.
func makeHostPath(h *corev1.HostPathVolumeSource) error {
	if h.Type == nil {
		return nil
	}
	switch *h.Type {
	case corev1.HostPathDirectoryOrCreate:
		return os.MkdirAll(h.Path, 0o755)
	case corev1.HostPathFileOrCreate:
		return makeTarget(h.Path, false)
	}
	return nil
}

// volumeDir is where a volume's files are on the host.
func (r *podRun) volumeDir(v *corev1.Volume) string {
	if v.HostPath != nil {
		return v.HostPath.Path
	}
	return filepath.Join(r.dir, "volumes", v.Name)
}

// hostsPath is the pod's hosts file, bound over each process's /etc/hosts.
func (r *podRun) hostsPath() string { return filepath.Join(r.dir, "etc-hosts") }

// writeHosts writes the pod's hosts file in place (a rename would leave the
// processes' bind mounts on the old file).
func (r *podRun) writeHosts() error {
	pod := r.podCopy()
	data := podHostsFile(pod.Namespace, podHostname(pod), r.addrs().PodIP, r.p.cfg.Services())
	if old, err := os.ReadFile(r.hostsPath()); err == nil && string(old) == string(data) {
		return nil
	}
	if err := os.WriteFile(r.hostsPath(), data, 0o644); err != nil {
		return fmt.Errorf("hosts file: %w", err)
	}
	return nil
}

// refreshInterval is how often volumes are rewritten without a change
// seen (tokens near their expiry, a missed watch event).
const refreshInterval = time.Minute

// refreshLoop rewrites the volumes and the hosts file when asked, and
// every refreshInterval, until the pod ends.
func (r *podRun) refreshLoop() {
	tick := time.NewTicker(refreshInterval)
	defer tick.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.refresh:
		case <-tick.C:
		}
		if err := r.writeVolumes(); err != nil && r.ctx.Err() == nil {
			r.p.cfg.Log.Warn("sluice-hostnode: volume refresh failed", "pod", r.key, "error", err)
		}
	}
}

// kick asks for the volumes and hosts file to be rewritten.
func (r *podRun) kick() {
	select {
	case r.refresh <- struct{}{}:
	default:
	}
}

// runInits runs the init containers one after the other; it reports
// whether they all succeeded.
func (r *podRun) runInits() bool {
	pod := r.podCopy()
	for i := range pod.Spec.InitContainers {
		if !r.runContainer(r.inits[i], &pod.Spec.InitContainers[i], true) {
			return false
		}
	}
	r.p.mu.Lock()
	r.initDone = true
	r.p.mu.Unlock()
	r.p.push(r)
	return true
}

// runContainers runs the containers side by side until each is done under
// the restart policy, or the pod ends.
func (r *podRun) runContainers() {
	pod := r.podCopy()
	var wg sync.WaitGroup
	for i := range pod.Spec.Containers {
		wg.Go(func() { r.runContainer(r.ctrs[i], &pod.Spec.Containers[i], false) })
	}
	wg.Wait()
}

// finish gives every container that is not terminated a terminated state,
// as the pod controller expects of a deleted pod.
func (r *podRun) finish() {
	r.p.mu.Lock()
	for _, cs := range append(append([]*ctrState{}, r.inits...), r.ctrs...) {
		switch {
		case cs.state.Terminated != nil:
		case cs.last.Terminated != nil:
			cs.state = cs.last
		default:
			cs.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 137, Reason: "ContainerStatusUnknown",
				Message:    "The container could not be located when the pod was terminated",
				FinishedAt: metav1.Now(),
			}}
		}
	}
	shutdown := r.shutdown
	r.p.mu.Unlock()
	if shutdown {
		return
	}
	r.p.push(r)
	if remove := r.p.cfg.RemovePod; remove != nil {
		ctx, cancel := context.WithTimeout(r.p.base, 10*time.Second)
		defer cancel()
		if err := remove(ctx, r.ref.Namespace, r.ref.Name, r.uid); err != nil {
			r.p.cfg.Log.Warn("sluice-hostnode: stopped pod not removed", "pod", r.key, "error", err)
		}
	}
}

// cleanup removes the pod's directory and frees its address.
func (r *podRun) cleanup() {
	if err := os.RemoveAll(r.dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.p.cfg.Log.Warn("sluice-hostnode: pod directory not removed", "pod", r.key, "error", err)
	}
	r.p.ips.Release(string(r.uid))
	if r.p.cfg.Tokens != nil {
		r.p.cfg.Tokens.Forget(r.uid)
	}
}

// podCopy is a copy of the pod's spec and metadata.
func (r *podRun) podCopy() *corev1.Pod {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	return r.pod.DeepCopy()
}

// addrs are the pod's and the node's addresses.
func (r *podRun) addrs() podAddrs {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	return podAddrs{PodIP: r.ip, HostIP: r.p.cfg.HostIP}
}

// snapshot is the pod with its current status; p.mu is held.
func (r *podRun) snapshot() *corev1.Pod {
	pod := r.pod.DeepCopy()
	pod.Status = buildPodStatus(pod, r.view(), r.conds, metav1.Now())
	r.conds = pod.Status.Conditions
	return pod
}

// ready tells whether the pod's containers all run; p.mu is held.
func (r *podRun) ready() bool {
	return podReady(r.view())
}

// view is what the status is made of; p.mu is held.
func (r *podRun) view() podView {
	v := podView{
		PodIP: r.ip, HostIP: r.p.cfg.HostIP, StartTime: r.startTime, Sandbox: r.sandbox,
		Failure: r.failure, MountErr: r.mountErr, InitDone: r.initDone || len(r.inits) == 0,
		Deleting: r.deleting || r.shutdown,
	}
	for _, cs := range r.inits {
		v.Inits = append(v.Inits, cs.view())
	}
	for _, cs := range r.ctrs {
		v.Ctrs = append(v.Ctrs, cs.view())
	}
	return v
}

// sleep waits d; false if the pod ended first.
func (r *podRun) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// event records an Event on the pod.
func (r *podRun) event(typ, reason, format string, args ...any) {
	r.p.cfg.Recorder.Eventf(r.ref, typ, reason, format, args...)
}

// stopGrace is how long the processes get after SIGTERM.
func (r *podRun) stopGrace() time.Duration {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	return r.grace
}

func timePtr(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

// backoff doubles a wait from a second up to a cap.
type backoff struct{ next, max time.Duration }

func newBackoff(max time.Duration) *backoff {
	return &backoff{next: min(time.Second, max), max: max}
}

func (b *backoff) step() time.Duration {
	d := b.next
	b.next = min(2*b.next, b.max)
	return d
}

func (b *backoff) reset() { b.next = min(time.Second, b.max) }

package hostnode

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ctrState is one container of a pod; guarded by provider.mu.
type ctrState struct {
	name, image, imageID string
	containerID          string
	// state is zero until the container first starts or fails to.
	state, last corev1.ContainerState
	restarts    int32
	// runs counts the processes started; a run's log is logs/NAME/N.log.
	runs      int
	cur, prev *logRun
}

// logRun is the log of one run of a container.
type logRun struct {
	path string
	done <-chan struct{} // closed when the run's output ended
}

// containerView is a container's status as the pod status shows it.
type containerView struct {
	Name, Image, ImageID, ContainerID string
	State, Last                       corev1.ContainerState
	Restarts                          int32
}

func (cs *ctrState) view() containerView {
	return containerView{
		Name: cs.name, Image: cs.image, ImageID: cs.imageID, ContainerID: cs.containerID,
		State: *cs.state.DeepCopy(), Last: *cs.last.DeepCopy(), Restarts: cs.restarts,
	}
}

// runOutcome is how one attempt to run a container ended.
type runOutcome int

const (
	// notStarted: the container could not start (its image, env or mounts
	// are wrong); the attempt does not count as a restart.
	notStarted runOutcome = iota
	// exited: the process ran and exited (or failed to start).
	exited
	// podEnded: the pod ended (deleted, or the node stops).
	podEnded
)

// runContainer runs a container until it is done under the pod's restart
// policy (an init container: until it succeeds), or the pod ends. It
// reports whether the container's last run succeeded.
func (r *podRun) runContainer(cs *ctrState, c *corev1.Container, init bool) bool {
	policy := r.podCopy().Spec.RestartPolicy
	bo := newBackoff(r.p.cfg.MaxBackoff)
	for {
		started := time.Now()
		outcome, code := r.runOnce(cs, c)
		switch outcome {
		case podEnded:
			return false
		case notStarted:
			if !r.sleep(bo.step()) {
				return false
			}
			continue
		}
		restart := policy == corev1.RestartPolicyAlways || policy == corev1.RestartPolicyOnFailure && code != 0
		if init {
			restart = code != 0 && policy != corev1.RestartPolicyNever
		}
		if !restart {
			return code == 0
		}
		if time.Since(started) > 10*r.p.cfg.MaxBackoff {
			bo.reset()
		}
		wait := bo.step()
		r.p.mu.Lock()
		cs.last = cs.state
		cs.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason:  "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", wait, c.Name, r.ref.Name, r.ref.Namespace, r.uid),
		}}
		r.p.mu.Unlock()
		r.event(corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s_%s(%s)", c.Name, r.ref.Name, r.ref.Namespace, r.uid)
		r.p.push(r)
		if !r.sleep(wait) {
			return false
		}
	}
}

// runOnce starts the container's process and waits for it to exit, or
// stops it when the pod ends.
func (r *podRun) runOnce(cs *ctrState, c *corev1.Container) (runOutcome, int32) {
	if r.ctx.Err() != nil {
		return podEnded, 0
	}
	path, ok := r.p.image(c.Image)
	if !ok {
		msg := fmt.Sprintf("image %q is not mapped to a host binary (sluice-hostnode --image %s=PATH)", c.Image, c.Image)
		r.waiting(cs, "ErrImagePull", msg, "Failed", "Failed to pull image %q: %s", c.Image, msg)
		return notStarted, 0
	}
	pod := r.podCopy()
	env, err := containerEnv(r.ctx, r.p.cfg.Objects, pod, c, r.addrs())
	if err == nil {
		var mounts []initMount
		if mounts, err = r.mounts(pod, c, env); err == nil {
			return r.start(cs, c, path, initSpec{Argv: containerArgv(c, path, env), Dir: c.WorkingDir, Mounts: mounts}, env)
		}
	}
	if r.ctx.Err() != nil {
		return podEnded, 0
	}
	r.waiting(cs, "CreateContainerConfigError", err.Error(), "Failed", "Error: %v", err)
	return notStarted, 0
}

// waiting shows the container waiting for reason, with an Event when the
// message is new.
func (r *podRun) waiting(cs *ctrState, reason, msg, eventReason, format string, args ...any) {
	r.p.mu.Lock()
	same := cs.state.Waiting != nil && cs.state.Waiting.Reason == reason && cs.state.Waiting.Message == msg
	if cs.state.Terminated != nil {
		cs.last = cs.state
	}
	cs.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
	r.p.mu.Unlock()
	if !same {
		r.event(corev1.EventTypeWarning, eventReason, format, args...)
		r.p.push(r)
	}
}

// start runs one process of the container, its output in a new log file,
// and waits for it.
func (r *podRun) start(cs *ctrState, c *corev1.Container, path string, spec initSpec, env *envList) (runOutcome, int32) {
	r.p.mu.Lock()
	run := cs.runs
	cs.runs++
	r.p.mu.Unlock()
	dir := filepath.Join(r.dir, "logs", c.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r.startFailed(cs, fmt.Errorf("log directory: %w", err))
	}
	// keep this run's log and the previous one's
	if err := os.Remove(filepath.Join(dir, strconv.Itoa(run-2)+".log")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return r.startFailed(cs, fmt.Errorf("old log: %w", err))
	}
	logPath := filepath.Join(dir, strconv.Itoa(run)+".log")
	lf, stdout, stderr, err := startLogFile(logPath)
	if err != nil {
		return r.startFailed(cs, fmt.Errorf("log: %w", err))
	}
	proc, err := startProcess(r.p.cfg.InitPath, spec, env.environ(), stdout, stderr)
	stdout.Close()
	stderr.Close()
	if err != nil {
		return r.startFailed(cs, err)
	}
	now := metav1.Now()
	r.p.mu.Lock()
	if cs.state.Terminated != nil {
		cs.last = cs.state
	}
	if cs.cur != nil {
		cs.restarts++
	}
	cs.prev, cs.cur = cs.cur, &logRun{path: logPath, done: lf.Done()}
	cs.imageID = "file://" + path
	cs.containerID = "hostnode://" + strconv.Itoa(proc.Pid())
	cs.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
	r.p.mu.Unlock()
	r.event(corev1.EventTypeNormal, "Started", "Started container %s (pid %d)", c.Name, proc.Pid())
	r.p.push(r)

	ended := false
	select {
	case <-proc.Exited():
	case <-r.ctx.Done():
		ended = true
		r.event(corev1.EventTypeNormal, "Killing", "Stopping container %s", c.Name)
		proc.stop(r.stopGrace())
	}
	code, sig := proc.exitStatus()
	term := &corev1.ContainerStateTerminated{
		ExitCode: code, Signal: int32(sig), Reason: "Completed",
		StartedAt: now, FinishedAt: metav1.Now(), ContainerID: cs.containerID,
	}
	if code != 0 {
		term.Reason = "Error"
	}
	r.p.mu.Lock()
	cs.state = corev1.ContainerState{Terminated: term}
	r.p.mu.Unlock()
	r.p.push(r)
	if ended {
		return podEnded, code
	}
	return exited, code
}

// startFailed shows a process that could not start as terminated, as a
// kubelet shows a StartError.
func (r *podRun) startFailed(cs *ctrState, err error) (runOutcome, int32) {
	now := metav1.Now()
	r.p.mu.Lock()
	if cs.state.Terminated != nil {
		cs.last = cs.state
	}
	cs.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 128, Reason: "StartError", Message: err.Error(), StartedAt: now, FinishedAt: now,
	}}
	r.p.mu.Unlock()
	r.event(corev1.EventTypeWarning, "Failed", "Error: %v", err)
	r.p.push(r)
	return exited, 128
}

// mounts are the binds of container c: each volumeMount (read-only for
// the volumes of API objects), then the pod's hosts file on /etc/hosts
// unless a volume takes that path; parents before their children.
func (r *podRun) mounts(pod *corev1.Pod, c *corev1.Container, env *envList) ([]initMount, error) {
	var out []initMount
	hosts := true
	for _, vm := range c.VolumeMounts {
		i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == vm.Name })
		if i < 0 {
			return nil, fmt.Errorf("volumeMount %s: no such volume", vm.Name)
		}
		v := &pod.Spec.Volumes[i]
		src := r.volumeDir(v)
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			sub = expand(vm.SubPathExpr, env.lookup)
		}
		if sub != "" {
			if err := checkVolumePath(sub); err != nil {
				return nil, fmt.Errorf("volumeMount %s: subPath: %w", vm.Name, err)
			}
			src = filepath.Join(src, filepath.FromSlash(sub))
			if !hasFiles(v) {
				if err := makeSubPath(src); err != nil {
					return nil, fmt.Errorf("volumeMount %s: subPath: %w", vm.Name, err)
				}
			}
		}
		target := filepath.Clean(vm.MountPath)
		if target == "/etc/hosts" {
			hosts = false
		}
		out = append(out, initMount{Source: src, Target: target, ReadOnly: vm.ReadOnly || hasFiles(v)})
	}
	if hosts {
		out = append(out, initMount{Source: r.hostsPath(), Target: "/etc/hosts", ReadOnly: true})
	}
	slices.SortStableFunc(out, func(a, b initMount) int {
		return strings.Count(a.Target, "/") - strings.Count(b.Target, "/")
	})
	return out, nil
}

// makeSubPath makes a missing subPath of an emptyDir or hostPath volume, a
// directory as a kubelet does.
func makeSubPath(path string) error {
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.MkdirAll(path, 0o755)
}

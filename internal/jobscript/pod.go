package jobscript

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Sources gives FromPod the objects a pod refers to. The provider implements
// it, typically with listers. A missing object gives an error for which
// k8s.io/apimachinery/pkg/api/errors.IsNotFound is true.
type Sources interface {
	ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	// ServiceAccountToken requests a token for the pod's service account,
	// as the kubelet does for projected serviceAccountToken volumes.
	ServiceAccountToken(ctx context.Context, namespace, serviceAccount, audience string, expirationSeconds *int64) (string, error)
}

// PodOptions are the site's side of turning a pod into a job.
type PodOptions struct {
	// Runtime runs the containers: it decides which images and mounts a pod
	// may use.
	Runtime Runtime
	// Site holds the site's flavors, image prefix and the rest of
	// interLink's plugin keys. The zero value has none.
	Site SiteOptions
}

// PodError reports a pod that cannot run as a job, naming the field at fault
// (spec.containers[1].command) and the reason. Retrying does not help: the
// pod should fail with Error() as its message.
type PodError struct {
	Field  string
	Reason string
}

func (e *PodError) Error() string { return e.Field + ": " + e.Reason }

func podErr(field, format string, args ...any) error {
	return &PodError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// FromPod turns pod into a Job, resolving every reference it makes.
//
// Init containers and containers keep their order, command and args (with
// $(VAR) references expanded as Kubernetes does), working directory, and
// environment (env and envFrom, with configMapKeyRef, secretKeyRef, fieldRef
// and resourceFieldRef), written to env/<container>. ConfigMap, Secret,
// projected (ConfigMap, Secret, downward API, service-account token) and
// downward-API volumes become files under volumes/<name>/; emptyDir volumes
// become directories there. Resources, spec.activeDeadlineSeconds and the
// annotations AnnotationFlags and AnnotationPreExec shape the job.
//
// What cannot be honoured refuses the pod with a *PodError: another volume
// type, a native sidecar, a mount under RuntimeNone, a container without a
// command where the runtime needs one, an env name that is not a shell
// name. envFrom keys that are not shell names are skipped, as the kubelet
// skipped invalid names. Service links, probes, ports, lifecycle hooks and
// security contexts are not part of a job and are ignored.
//
// Other errors (a missing ConfigMap or Secret that is not optional, a failed
// token request) may pass with time: the caller should retry.
func FromPod(ctx context.Context, pod *corev1.Pod, src Sources, opts PodOptions) (*Job, error) {
	if pod == nil {
		return nil, errors.New("job from pod: no pod")
	}
	if err := opts.Runtime.Validate(); err != nil {
		return nil, fmt.Errorf("job from pod: %w", err)
	}
	b := &podBuilder{ctx: ctx, pod: pod, src: src, rt: opts.Runtime, site: &opts.Site, paths: map[string]bool{}}
	job, err := b.build()
	if err != nil {
		return nil, err
	}
	// Whatever FromPod accepts, Script must render.
	if err := checkScriptJob(job, ScriptOptions{JobDir: "/job", Runtime: opts.Runtime, Site: opts.Site}); err != nil {
		return nil, &PodError{Field: "spec", Reason: err.Error()}
	}
	return job, nil
}

// podBuilder holds what FromPod gathers on its way.
type podBuilder struct {
	ctx  context.Context
	pod  *corev1.Pod
	src  Sources
	rt   Runtime
	site *SiteOptions
	job  *Job
	// ann holds the pod's annotations as annotations.Current reads them:
	// a job is made from these, never from pod.Annotations, so that one
	// written under the legacy prefix goes through the same checks.
	ann map[string]string
	// written gives the key a pod wrote an annotation of ann under, where
	// it is not the annotation's name (the legacy prefix).
	written map[string]string
	// imageRoot is the pod's AnnotationImageRoot, when set.
	imageRoot    string
	imageRootSet bool

	volumes map[string]volume // by volume name
	paths   map[string]bool   // paths of job.Files, to refuse a path written twice
	cache   sourceCache
}

func (b *podBuilder) build() (*Job, error) {
	p := b.pod
	switch {
	case CheckNamespace(p.Namespace) != nil:
		return nil, podErr("metadata.namespace", "%v", CheckNamespace(p.Namespace))
	case checkPodName(p.Name) != nil:
		return nil, podErr("metadata.name", "%v", checkPodName(p.Name))
	case CheckUID(string(p.UID)) != nil:
		return nil, podErr("metadata.uid", "%v", CheckUID(string(p.UID)))
	case len(p.Spec.Containers) == 0:
		return nil, podErr("spec.containers", "the pod has no containers")
	}
	b.job = &Job{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)}
	b.readAnnotations()
	if err := b.annotations(); err != nil {
		return nil, err
	}
	res, err := podResources(p)
	if err != nil {
		return nil, err
	}
	b.job.Resources = res
	name, named := b.ann[AnnotationFlavor]
	f, warnings := b.site.chooseFlavor(name, named, res.GPUs)
	if f != nil {
		applyFlavor(b.job, f)
	}
	b.job.Warnings = append(b.job.Warnings, warnings...)
	if err := b.buildVolumes(); err != nil {
		return nil, err
	}
	for i := range p.Spec.InitContainers {
		field := fmt.Sprintf("spec.initContainers[%d]", i)
		c := &p.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			return nil, podErr(field+".restartPolicy", "sidecar containers (restartPolicy Always) are not supported")
		}
		jc, err := b.container(c, field)
		if err != nil {
			return nil, err
		}
		b.job.Init = append(b.job.Init, jc)
	}
	for i := range p.Spec.Containers {
		field := fmt.Sprintf("spec.containers[%d]", i)
		jc, err := b.container(&p.Spec.Containers[i], field)
		if err != nil {
			return nil, err
		}
		b.probes(&p.Spec.Containers[i], field, &jc)
		b.job.Containers = append(b.job.Containers, jc)
	}
	if b.rt == RuntimeEnroot {
		if err := b.addFile("spec", File{Path: enrootRCFile, Data: []byte(enrootRC), Mode: 0o644}); err != nil {
			return nil, err
		}
	}
	return b.job, nil
}

// envNames gives the names of a container's variables for runtimes that
// take them by name (enroot), nil for the others. enroot writes the
// environment one line per variable: a value holding a line break is
// refused.
func (b *podBuilder) envNames(vars []envEntry) ([]string, error) {
	if b.rt != RuntimeEnroot {
		return nil, nil
	}
	names := make([]string, 0, len(vars))
	for _, v := range vars {
		if strings.ContainsAny(v.Value, "\n\r") {
			return nil, fmt.Errorf("the value of %s holds a line break, which enroot's environment (one line per variable) cannot hold", v.Name)
		}
		names = append(names, v.Name)
	}
	return names, nil
}

func (b *podBuilder) annotations() error {
	a := b.ann
	flags, dropped, err := b.site.Sbatch.PodFlags(a[AnnotationFlags])
	if err != nil {
		return podErr(b.field(AnnotationFlags), "%v", err)
	}
	b.job.Flags = flags
	b.dropped(dropped)
	pre := a[AnnotationPreExec]
	if err := checkScriptText(pre); err != nil {
		return podErr(b.field(AnnotationPreExec), "the snippet %v", err)
	}
	b.job.PreExec = pre
	return b.runtimeAnnotations()
}

// container turns one container of the pod into a job container.
func (b *podBuilder) container(c *corev1.Container, field string) (Container, error) {
	if err := CheckContainerName(c.Name); err != nil {
		return Container{}, podErr(field+".name", "%v", err)
	}
	image := b.image(c.Image)
	if _, err := b.rt.image(image); err != nil {
		return Container{}, podErr(field+".image", "runtime %s: %v", b.rt, err)
	}
	if len(c.Command) == 0 && b.rt.needsCommand() {
		return Container{}, podErr(field+".command", "runtime %s needs a command: %s", b.rt, needsCommandWhy[b.rt])
	}
	if c.WorkingDir != "" {
		if err := checkWorkingDir(c.WorkingDir); err != nil {
			return Container{}, podErr(field+".workingDir", "%v", err)
		}
	}
	if len(c.VolumeDevices) > 0 {
		return Container{}, podErr(field+".volumeDevices", "block devices are not supported")
	}
	env, err := b.env(c, field)
	if err != nil {
		return Container{}, err
	}
	vars := env.vars()
	data, err := formatEnvFile(vars)
	if err != nil {
		return Container{}, podErr(field+".env", "%v", err)
	}
	names, err := b.envNames(vars)
	if err != nil {
		return Container{}, podErr(field+".env", "%v", err)
	}
	jc := Container{
		Name:       c.Name,
		Image:      image,
		Command:    env.expandAll(c.Command),
		Args:       env.expandAll(c.Args),
		WorkingDir: c.WorkingDir,
		EnvFile:    envFilePath(c.Name),
		EnvNames:   names,
	}
	if i, err := checkArgv(jc.Command); err != nil {
		return Container{}, podErr(fmt.Sprintf("%s.command[%d]", field, i), "%v (after $(VAR) expansion)", err)
	}
	if i, err := checkArgv(jc.Args); err != nil {
		return Container{}, podErr(fmt.Sprintf("%s.args[%d]", field, i), "%v (after $(VAR) expansion)", err)
	}
	if err := b.addFile(field+".env", File{Path: jc.EnvFile, Data: data, Mode: envFileMode}); err != nil {
		return Container{}, err
	}
	for i := range c.VolumeMounts {
		m, err := b.mount(&c.VolumeMounts[i], env, fmt.Sprintf("%s.volumeMounts[%d]", field, i))
		if err != nil {
			return Container{}, err
		}
		jc.Mounts = append(jc.Mounts, m)
	}
	return jc, nil
}

var needsCommandWhy = map[Runtime]string{
	RuntimeCharliecloud: "ch-run has no default command to fall back on",
	RuntimeNone:         "there is no image to take a default command from",
}

// addFile adds a file to the job, refusing a path written twice.
func (b *podBuilder) addFile(field string, f File) error {
	if b.paths[f.Path] {
		return podErr(field, "path %s is written twice", f.Path)
	}
	b.paths[f.Path] = true
	b.job.Files = append(b.job.Files, f)
	return nil
}

package shadow

import (
	"slices"
	"strings"

	"github.com/sluice-hpc/sluice/internal/annotations"
	corev1 "k8s.io/api/core/v1"
)

// KeptInit returns the init containers pod keeps in the cluster
// (interlink.eu/disable-offload-init-containers), in the pod's order. They
// run in the shadow; the job is submitted once they have completed.
func KeptInit(pod *corev1.Pod) []corev1.Container {
	return keep(pod.Spec.InitContainers, keptSet(pod, annotations.DisableOffloadInitContainers))
}

// KeptContainers returns the containers pod keeps in the cluster
// (interlink.eu/disable-offload-containers), in the pod's order. They run in
// the shadow beside the tunnels.
func KeptContainers(pod *corev1.Pod) []corev1.Container {
	return keep(pod.Spec.Containers, keptSet(pod, annotations.DisableOffloadContainers))
}

// Offloaded returns a copy of pod without its kept init containers and
// containers, and without the volumes that only they mount: the pod the
// Slurm job runs. It returns pod's copy unchanged when nothing is kept.
func Offloaded(pod *corev1.Pod) *corev1.Pod {
	out := pod.DeepCopy()
	keptInit := keptSet(pod, annotations.DisableOffloadInitContainers)
	kept := keptSet(pod, annotations.DisableOffloadContainers)
	if len(keptInit) == 0 && len(kept) == 0 {
		return out
	}
	out.Spec.InitContainers = drop(out.Spec.InitContainers, keptInit)
	out.Spec.Containers = drop(out.Spec.Containers, kept)

	used := map[string]bool{}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		for _, name := range volumeNames(c) {
			used[name] = true
		}
	}
	still := map[string]bool{}
	for _, c := range slices.Concat(out.Spec.InitContainers, out.Spec.Containers) {
		for _, name := range volumeNames(c) {
			still[name] = true
		}
	}
	volumes := out.Spec.Volumes[:0]
	for _, v := range out.Spec.Volumes {
		// A volume no container mounts is none of the kept containers'
		// business: it stays.
		if still[v.Name] || !used[v.Name] {
			volumes = append(volumes, v)
		}
	}
	out.Spec.Volumes = volumes
	return out
}

// keptNames splits the value of a kept-containers annotation: names
// separated by commas and white space.
func keptNames(value string) []string {
	return strings.FieldsFunc(value, func(r rune) bool {
		switch r {
		case ' ', '\t', '\n', '\r', ',':
			return true
		}
		return false
	})
}

func keptSet(pod *corev1.Pod, annotation string) map[string]bool {
	names := keptNames(pod.Annotations[annotation])
	if len(names) == 0 {
		return nil
	}
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set
}

func keep(cs []corev1.Container, set map[string]bool) []corev1.Container {
	var out []corev1.Container
	for _, c := range cs {
		if set[c.Name] {
			out = append(out, *c.DeepCopy())
		}
	}
	return out
}

func drop(cs []corev1.Container, set map[string]bool) []corev1.Container {
	var out []corev1.Container
	for _, c := range cs {
		if !set[c.Name] {
			out = append(out, c)
		}
	}
	return out
}

func volumeNames(c corev1.Container) []string {
	var names []string
	for _, m := range c.VolumeMounts {
		names = append(names, m.Name)
	}
	for _, d := range c.VolumeDevices {
		names = append(names, d.Name)
	}
	return names
}

// checkKeptNames reports a name a kept-containers annotation lists that is
// not a container of the pod (of the right kind): a typo would otherwise
// offload the container silently.
func checkKeptNames(pod *corev1.Pod) error {
	for _, k := range []struct {
		annotation string
		containers []corev1.Container
	}{
		{annotations.DisableOffloadInitContainers, pod.Spec.InitContainers},
		{annotations.DisableOffloadContainers, pod.Spec.Containers},
	} {
		have := map[string]bool{}
		for _, c := range k.containers {
			have[c.Name] = true
		}
		for _, n := range keptNames(pod.Annotations[k.annotation]) {
			if !have[n] {
				return podErr("metadata.annotations["+k.annotation+"]", "names %q, which is not one of the pod's %s", n, kind(k.annotation))
			}
		}
	}
	return nil
}

func kind(annotation string) string {
	if annotation == annotations.DisableOffloadInitContainers {
		return "init containers"
	}
	return "containers"
}

package provider

import (
	"context"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/slurm"
	"github.com/sluice-hpc/sluice/internal/textcut"
)

// A pod's annotations under interLink's prefixes shape its job and its
// shadow. They can be patched at any time, and the site's rules hold for
// what is used, not for what the pod said when it was bound: each
// submission attempt checks the annotations it uses (trySubmit), and once
// the job is submitted they are kept as they were then. A job cannot
// change, and the shadow's place, its node and its deletion must follow
// what the job was made with, never a value no check saw.

// EventAnnotationChangeIgnored is the reason of the Warning Event telling
// that annotations of a submitted pod changed and were not applied.
const EventAnnotationChangeIgnored = "AnnotationChangeIgnored"

// prefixed returns the annotations of a under interLink's prefixes.
func prefixed(a map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		if annotations.Prefixed(k) {
			out[k] = v
		}
	}
	return out
}

// applyMeta takes a pod's new metadata into st; p.mu must be held. Before
// submission it is taken whole, and recheck tells that the annotations a
// submission checks changed. Once submitted, those annotations stay as
// submitted, and changed names those that the update sets otherwise, sorted,
// the first time they are seen (nil after that, and when there are none).
func (st *podState) applyMeta(meta metav1.ObjectMeta) (changed []string, recheck bool) {
	if st.submittedWith == nil {
		recheck = !maps.Equal(prefixed(st.pod.Annotations), prefixed(meta.Annotations))
		st.pod.ObjectMeta = meta
		return nil, recheck
	}
	want := st.submittedWith
	got := prefixed(meta.Annotations)
	for k := range want {
		if v, ok := got[k]; !ok || v != want[k] {
			changed = append(changed, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			changed = append(changed, k)
		}
	}
	slices.Sort(changed)
	kept := maps.Clone(meta.Annotations)
	maps.DeleteFunc(kept, func(k, _ string) bool { return annotations.Prefixed(k) })
	if len(want) > 0 && kept == nil {
		kept = map[string]string{}
	}
	maps.Copy(kept, want)
	meta.Annotations = kept
	st.pod.ObjectMeta = meta

	told := strings.Join(changed, ", ")
	if told == st.changeTold {
		return nil, false
	}
	st.changeTold = told
	return changed, false
}

// freeze keeps, from now on, the annotations pod, as submitted, had under
// interLink's prefixes; p.mu must be held. It returns what applyMeta does
// for the metadata last seen, which may have changed meanwhile.
func (st *podState) freeze(pod *corev1.Pod) []string {
	st.submittedWith = prefixed(pod.Annotations)
	changed, _ := st.applyMeta(*st.pod.ObjectMeta.DeepCopy())
	return changed
}

// recoverFrozen keeps, for a pod met again after a restart, the annotations
// its job was submitted with, as the job directory kept them (Jobs.Submitted),
// and returns those the pod now sets otherwise: they were patched while no
// process held the pod, and the adopted job, its shadow and its deletion
// must follow what the job was made with. It does so once, at the first
// attempt; a pod whose job kept none (none was submitted, or by a version
// before) is checked as it is.
func (p *Provider) recoverFrozen(ctx context.Context, st *podState) ([]string, error) {
	p.mu.Lock()
	adoptable := st.adoptable && !st.recovered && st.submittedWith == nil
	ref := st.ref
	p.mu.Unlock()
	if !adoptable {
		return nil, nil
	}
	a, err := p.cfg.Jobs.Submitted(ctx, ref)
	if err != nil {
		return nil, err // the slurm package names the file
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st.recovered = true
	if a == nil {
		return nil, nil
	}
	was := st.pod.DeepCopy()
	was.Annotations = prefixed(a)
	return st.freeze(was), nil
}

// tellChangeIgnored records the Warning Event of annotations that changed
// after pod was submitted as job, if any.
func (p *Provider) tellChangeIgnored(pod *corev1.Pod, job slurm.JobID, changed []string) {
	if len(changed) == 0 {
		return
	}
	names := strings.Join(changed, ", ")
	p.event(pod, corev1.EventTypeWarning, EventAnnotationChangeIgnored,
		"%s changed after the pod was submitted as Slurm job %s: the job and its shadow keep the values they were checked and submitted with; delete and recreate the pod to change them",
		truncateNames(names), job)
	p.log.Warn("provider: annotations changed after submission are not applied", "pod", keyOf(pod), "uid", pod.UID, "job", job, "annotations", changed)
}

// maxNames bounds the names an Event lists, so that a pod with many
// annotations cannot make a huge Event.
const maxNames = 512

func truncateNames(s string) string { return textcut.Cut(s, maxNames, "...") }

// wakeSubmission asks a waiting submission of st to try again now.
func (st *podState) wakeSubmission() {
	select {
	case st.wake <- struct{}{}:
	default: // one is pending already, or nothing waits (st.wake is nil)
	}
}

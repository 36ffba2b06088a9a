package shadow

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/jobscript"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// keptCachePod keeps a container "cache" with the security context sc
// beside a forwarded port; podSC is the pod's.
func keptCachePod(sc *corev1.SecurityContext, podSC *corev1.PodSecurityContext) *corev1.Pod {
	return testPod("science", "p", withPorts("8080"),
		withContainer(corev1.Container{Name: "cache", Image: "redis", SecurityContext: sc}),
		withAnnotation(annotations.DisableOffloadContainers, "cache"),
		func(p *corev1.Pod) { p.Spec.SecurityContext = podSC })
}

// TestEnsurePodSecurity: a shadow the PodSecurity admission of its
// namespace would refuse is refused before anything of it is written, with
// a PodError naming the kept container and the check; one it admits is
// made. Only the labels of the shadow namespace count (one that exists is
// one the operator trusts).
func TestEnsurePodSecurity(t *testing.T) {
	root := keptCachePod(nil, nil)
	yes := true
	nonRoot := keptCachePod(restrictedContainer(), restrictedPod())
	baseline := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "science-shadow",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}}}
	unlabelled := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "science-shadow"}}
	privileged := keptCachePod(&corev1.SecurityContext{Privileged: &yes}, nil)
	for _, tc := range []struct {
		name     string
		existing []runtime.Object
		tenant   string
		pod      *corev1.Pod
		want     []string // in the refusal; none: made
	}{
		{"root kept container, sluice's namespace", nil, "", root,
			[]string{"science-shadow enforces the restricted", `container "cache"`, "runAsNonRoot", "allowPrivilegeEscalation"}},
		{"restricted kept container, sluice's namespace", nil, "", nonRoot, nil},
		{"root kept container, baseline namespace", []runtime.Object{baseline}, "", root, nil},
		{"privileged kept container, baseline namespace", []runtime.Object{baseline}, "", privileged,
			[]string{"enforces the baseline", "privileged"}},
		{"root kept container, unlabelled namespace", []runtime.Object{unlabelled}, "", root, nil},
		{"root kept container, tenant namespace", nil, "science", root, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFake(tc.existing...)
			s := testSpec()
			s.TenantNamespace = tc.tenant
			if tc.tenant == "" {
				s.TrustedNamespaces = []string{"science-shadow"}
			}
			m, _ := newManager(t, c, s)
			_, err := m.Ensure(context.Background(), tc.pod)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Ensure: %v", err)
				}
				return
			}
			var perr *jobscript.PodError
			if !errors.As(err, &perr) || perr.Field != "metadata.annotations[interlink.eu/disable-offload-containers]" {
				t.Fatalf("Ensure = %v; want a PodError about the kept containers", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q; want it to contain %q", err, w)
				}
			}
			for _, w := range writes(c.Actions()) {
				// The namespace, and its record, are sluice's.
				if !strings.HasSuffix(w, " namespaces ") && w != "create configmaps sluice-system" {
					t.Errorf("Ensure wrote %s for a shadow it refused", w)
				}
			}
		})
	}
}

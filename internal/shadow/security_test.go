package shadow

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/annotations"
	corev1 "k8s.io/api/core/v1"
	psapi "k8s.io/pod-security-admission/api"
)

// shadowShapes are pods whose shadows run each kind of sluice container:
// both tunnels, one of them, and the hold container alone with a kept init
// container of the restricted kind.
func shadowShapes() map[string]*corev1.Pod {
	return map[string]*corev1.Pod{
		"forward and reverse": testPod("science", "both", withPorts("8080"), withAnnotation(annotations.ReverseForwards, "redis:6379")),
		"forward only":        testPod("science", "fwd", withPorts("8080")),
		"reverse only":        testPod("science", "rev", withAnnotation(annotations.ReverseForwards, "redis:6379")),
		"hold": testPod("science", "hold",
			withInit(corev1.Container{Name: "fetch", Image: "curl", SecurityContext: restrictedContainer()}),
			withAnnotation(annotations.DisableOffloadInitContainers, "fetch"),
			func(p *corev1.Pod) { p.Spec.SecurityContext = restrictedPod() }),
	}
}

// restrictedPod and restrictedContainer are what a user gives a pod that
// passes the restricted standard.
func restrictedPod() *corev1.PodSecurityContext {
	yes := true
	return &corev1.PodSecurityContext{RunAsNonRoot: &yes, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
}

func restrictedContainer() *corev1.SecurityContext {
	no := false
	return &corev1.SecurityContext{AllowPrivilegeEscalation: &no, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
}

// TestSecurityFields checks each setting of the shadow pod and of each
// sluice container, field by field, and the key's volume.
func TestSecurityFields(t *testing.T) {
	for name, pod := range shadowShapes() {
		t.Run(name, func(t *testing.T) {
			objs, err := testSpec().Build(pod)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			ps := objs.Deployment.Spec.Template.Spec
			psc := ps.SecurityContext
			if name == "hold" {
				// Kept init containers: the user's pod-level settings, and
				// the tunnel user's fsGroup since the user set none.
				want := restrictedPod()
				fsGroup := int64(65532)
				want.FSGroup = &fsGroup
				if !reflect.DeepEqual(psc, want) {
					t.Errorf("pod security context %s; want the user's with fsGroup 65532", psc)
				}
			} else {
				checkPodContext(t, psc)
			}
			var ours int
			for _, c := range ps.Containers {
				if c.Name != ContainerForward && c.Name != ContainerReverse && c.Name != ContainerHold {
					continue
				}
				ours++
				checkContainerSecurity(t, c)
			}
			if ours == 0 {
				t.Fatalf("no sluice container in %v", containerNames(ps.Containers))
			}
			for _, v := range ps.Volumes {
				if v.Name == volSSH && (v.Secret == nil || v.Secret.DefaultMode == nil || *v.Secret.DefaultMode != 0o440) {
					t.Errorf("key volume %+v; want a Secret of mode 0440", v.VolumeSource)
				}
			}
		})
	}
}

func checkPodContext(t *testing.T, sc *corev1.PodSecurityContext) {
	t.Helper()
	if sc == nil {
		t.Fatal("pod has no security context")
	}
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("pod runAsNonRoot = %s; want true", show(sc.RunAsNonRoot))
	}
	for field, v := range map[string]*int64{"runAsUser": sc.RunAsUser, "runAsGroup": sc.RunAsGroup, "fsGroup": sc.FSGroup} {
		if v == nil || *v != 65532 {
			t.Errorf("pod %s = %s; want 65532", field, show(v))
		}
	}
	if sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod seccompProfile = %v; want RuntimeDefault", sc.SeccompProfile)
	}
}

func checkContainerSecurity(t *testing.T, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil {
		t.Fatalf("%s has no security context", c.Name)
	}
	for field, v := range map[string]*bool{"runAsNonRoot": sc.RunAsNonRoot, "readOnlyRootFilesystem": sc.ReadOnlyRootFilesystem} {
		if v == nil || !*v {
			t.Errorf("%s %s = %s; want true", c.Name, field, show(v))
		}
	}
	if v := sc.AllowPrivilegeEscalation; v == nil || *v {
		t.Errorf("%s allowPrivilegeEscalation = %s; want false", c.Name, show(v))
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Errorf("%s is privileged", c.Name)
	}
	for field, v := range map[string]*int64{"runAsUser": sc.RunAsUser, "runAsGroup": sc.RunAsGroup} {
		if v == nil || *v != 65532 {
			t.Errorf("%s %s = %s; want 65532", c.Name, field, show(v))
		}
	}
	if sc.Capabilities == nil || !reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
		t.Errorf("%s capabilities = %v; want drop ALL, add none", c.Name, sc.Capabilities)
	}
	if sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s seccompProfile = %v; want RuntimeDefault", c.Name, sc.SeccompProfile)
	}
}

// restrictedViolations runs the pod template of objs through the checks
// the API server's PodSecurity admission makes, at level restricted,
// version latest, and returns what they forbid.
func restrictedViolations(t *testing.T, objs *Objects) []string {
	t.Helper()
	v, err := violations(psapi.LevelVersion{Level: psapi.LevelRestricted, Version: psapi.LatestVersion()}, &objs.Deployment.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRestrictedAdmits: every shape of shadow passes the restricted Pod
// Security Standard, as the namespace sluice creates enforces it.
func TestRestrictedAdmits(t *testing.T) {
	for name, pod := range shadowShapes() {
		t.Run(name, func(t *testing.T) {
			objs, err := testSpec().Build(pod)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if v := restrictedViolations(t, objs); v != nil {
				t.Errorf("restricted forbids the shadow: %s", strings.Join(v, "; "))
			}
		})
	}
}

// TestRestrictedRefuses: the check is the real one, and each setting of
// the tunnel containers is needed: without it the shadow is refused.
func TestRestrictedRefuses(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name  string
		spoil func(ps *corev1.PodSpec, sc *corev1.SecurityContext)
		want  string
	}{
		{"privilege escalation", func(_ *corev1.PodSpec, sc *corev1.SecurityContext) { sc.AllowPrivilegeEscalation = nil }, "allowPrivilegeEscalation"},
		{"capabilities kept", func(_ *corev1.PodSpec, sc *corev1.SecurityContext) { sc.Capabilities = nil }, "unrestricted capabilities"},
		{"root allowed", func(ps *corev1.PodSpec, sc *corev1.SecurityContext) {
			ps.SecurityContext.RunAsNonRoot, sc.RunAsNonRoot = nil, nil
		}, "runAsNonRoot"},
		{"no seccomp", func(ps *corev1.PodSpec, sc *corev1.SecurityContext) {
			ps.SecurityContext.SeccompProfile, sc.SeccompProfile = nil, nil
		}, "seccompProfile"},
		{"privileged", func(_ *corev1.PodSpec, sc *corev1.SecurityContext) { sc.Privileged = &yes }, "privileged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := testSpec().Build(shadowShapes()["forward and reverse"])
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			ps := &objs.Deployment.Spec.Template.Spec
			tc.spoil(ps, ps.Containers[0].SecurityContext)
			v := restrictedViolations(t, objs)
			if !strings.Contains(strings.Join(v, "; "), tc.want) {
				t.Errorf("violations %q; want one about %s", v, tc.want)
			}
		})
	}
}

// TestSecurityKept: kept containers keep the security context the user
// gave them, and the pod-level one is the user's, so that ours does not
// change how they run; the tunnels set theirs themselves. The user's
// fsGroup is kept (the tunnels read the key through it).
func TestSecurityKept(t *testing.T) {
	root, fsGroup, extra := int64(0), int64(2000), int64(3000)
	cache := corev1.Container{Name: "cache", Image: "redis", SecurityContext: &corev1.SecurityContext{RunAsUser: &root}}
	userSC := &corev1.PodSecurityContext{
		FSGroup:            &fsGroup,
		SupplementalGroups: []int64{extra},
		Sysctls:            []corev1.Sysctl{{Name: "net.ipv4.ip_local_port_range", Value: "1024 65535"}},
	}
	pod := testPod("science", "p", withPorts("8080"), withContainer(cache),
		withAnnotation(annotations.DisableOffloadContainers, "cache"),
		withAnnotation(annotations.ReverseForwards, "redis:6379"),
		func(p *corev1.Pod) { p.Spec.SecurityContext = userSC.DeepCopy() })
	objs, err := testSpec().Build(pod)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	ps := objs.Deployment.Spec.Template.Spec
	if !reflect.DeepEqual(ps.SecurityContext, userSC) {
		t.Errorf("pod security context %s; want the user's %s", ps.SecurityContext, userSC)
	}
	if c := container(objs, "cache"); c == nil || !reflect.DeepEqual(c.SecurityContext, cache.SecurityContext) {
		t.Errorf("kept container %+v; want its own security context, runAsUser 0", c)
	}
	for _, name := range []string{ContainerForward, ContainerReverse} {
		checkContainerSecurity(t, *container(objs, name))
	}
	// The kept container runs as root: restricted refuses the shadow, as it
	// would have refused the user's pod.
	if v := restrictedViolations(t, objs); !strings.Contains(strings.Join(v, "; "), "runAsUser=0") {
		t.Errorf("violations %q; want the kept container's runAsUser=0", v)
	}

	// A kept container that names no user gets none from the shadow: it
	// runs as its image says, as in the user's pod.
	pod = testPod("science", "p", withPorts("8080"), withContainer(corev1.Container{Name: "cache", Image: "redis"}),
		withAnnotation(annotations.DisableOffloadContainers, "cache"))
	if objs, err = testSpec().Build(pod); err != nil {
		t.Fatalf("Build: %v", err)
	}
	ps = objs.Deployment.Spec.Template.Spec
	if sc := ps.SecurityContext; sc == nil || sc.RunAsUser != nil || sc.RunAsNonRoot != nil || sc.FSGroup == nil || *sc.FSGroup != 65532 {
		t.Errorf("pod security context %s; want fsGroup 65532 only", sc)
	}
	if c := container(objs, "cache"); c.SecurityContext != nil {
		t.Errorf("kept container security context %s; want none", c.SecurityContext)
	}
}

// show prints what p points to, or nil.
func show[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

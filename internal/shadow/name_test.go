package shadow

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sluice-hpc/sluice/internal/annotations"
)

func TestName(t *testing.T) {
	long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61)
	if len(long) != 253 {
		t.Fatalf("test name has %d characters; want 253", len(long))
	}
	tests := []struct {
		name   string
		prefix string // what Name must start with
	}{
		{"web", "web-"},
		{"notebook-0", "notebook-0-"},
		{"my.dotted.pod", "my-dotted-pod-"},
		{"0-starts-with-digit", "p0-starts-with-digit-"},
		{long, strings.Repeat("a", 52)},
		{strings.Repeat("x", 51) + "-y" + strings.Repeat("z", 200), strings.Repeat("x", 51) + "-"},
		{"UPPER.case", "upper-case-"},
		{"", "shadow-"},
		{"-.-", "shadow-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Name(testPod("science", tt.name))
			if msgs := validation.IsDNS1035Label(got); len(msgs) > 0 {
				t.Errorf("Name = %q, not a DNS-1035 label: %v", got, msgs)
			}
			if !strings.HasPrefix(got, tt.prefix) {
				t.Errorf("Name = %q; want it to start with %q", got, tt.prefix)
			}
			if strings.Contains(got, "--") && !strings.Contains(tt.name, "--") {
				t.Errorf("Name = %q has a double hyphen the pod name has not", got)
			}
			if again := Name(testPod("science", tt.name)); again != got {
				t.Errorf("Name is not stable: %q then %q", got, again)
			}
			if msgs := validation.IsDNS1123Subdomain(NodeConfigMap(got)); len(msgs) > 0 {
				t.Errorf("NodeConfigMap = %q: %v", NodeConfigMap(got), msgs)
			}
		})
	}
}

func TestNameUnique(t *testing.T) {
	base := strings.Repeat("n", 240)
	seen := map[string]string{}
	add := func(what, name string) {
		t.Helper()
		if old, ok := seen[name]; ok {
			t.Fatalf("Name %q for %s and %s", name, old, what)
		}
		seen[name] = what
	}
	for i := 0; i < 500; i++ {
		podName := fmt.Sprintf("%s%013d", base, i) // 253 characters, same 52-character prefix
		add("pod "+podName, Name(testPod("science", podName)))
	}
	// Pods that differ only in their namespace (they share a tenant
	// namespace) or only in their UID (deleted and created again).
	add("science/web", Name(testPod("science", "web")))
	add("physics/web", Name(testPod("physics", "web")))
	add("science/web uid 2", Name(testPod("science", "web", withUID("11111111-2222-3333-4444-555555555555"))))
	// namespace/name boundaries do not blur: "a/b-c" and "a-b/c".
	add("a/b-c", Name(testPod("a", "b-c")))
	add("a-b/c", Name(testPod("a-b", "c")))
}

func TestNamespace(t *testing.T) {
	pod := testPod("science", "web")
	if got := Namespace(pod, ""); got != "science-shadow" {
		t.Errorf("Namespace without tenant = %q; want science-shadow", got)
	}
	if got := Namespace(pod, "hpc-tenant"); got != "hpc-tenant" {
		t.Errorf("Namespace with tenant = %q; want hpc-tenant", got)
	}
	pod.Annotations = map[string]string{annotations.ShadowSameNS: "true"}
	if got := Namespace(pod, ""); got != "science" {
		t.Errorf("Namespace of a pod asking for its own = %q; want science", got)
	}
	if got := Namespace(pod, "hpc-tenant"); got != "hpc-tenant" {
		t.Errorf("Namespace of a pod asking for its own, with tenant = %q; want hpc-tenant (Build refuses it)", got)
	}
	pod.Annotations[annotations.ShadowSameNS] = "false"
	if got := Namespace(pod, ""); got != "science-shadow" {
		t.Errorf("Namespace with %s false = %q; want science-shadow", annotations.ShadowSameNS, got)
	}
}

func FuzzName(f *testing.F) {
	f.Add("science", "web", testUID)
	f.Add("", "", "")
	f.Add("a", "0.-.", "x")
	f.Add("ns", strings.Repeat("Ä.", 130), "u")
	f.Fuzz(func(t *testing.T, ns, name, uid string) {
		pod := testPod(ns, name, withUID(uid))
		got := Name(pod)
		if msgs := validation.IsDNS1035Label(got); len(msgs) > 0 {
			t.Errorf("Name(%q/%q) = %q: %v", ns, name, got, msgs)
		}
	})
}

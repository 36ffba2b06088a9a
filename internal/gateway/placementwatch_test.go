package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/gateway"
	"github.com/sluice-hpc/sluice/internal/shadow"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

type report struct {
	record types.NamespacedName
	to     *gateway.Placement
}

func nodeConfigMap(name, node string, p gateway.Placement) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-shadow", Name: shadow.NodeConfigMap(name), Labels: map[string]string{
			shadow.LabelManagedBy: shadow.ManagedBy, shadow.LabelNode: node, shadow.LabelShadow: name, shadow.LabelPodUID: "u-" + name,
		}},
		Data: map[string]string{shadow.NodeKey: p.Node, shadow.JobKey: p.Job, shadow.SocketDirKey: p.SocketDir, shadow.TunnelsKey: "1"},
	}
}

// TestPlacementWatcher: a change of a node ConfigMap's placement, and its
// deletion, are reported; a change of another key, a ConfigMap of another
// virtual node and a shadow's other ConfigMaps are not.
func TestPlacementWatcher(t *testing.T) {
	first := gateway.Placement{Node: "node1", Job: "4242", SocketDir: "/tmp/sluice-sock/p-1"}
	mine := nodeConfigMap("s1", "hpc-a", first)
	theirs := nodeConfigMap("s2", "hpc-b", first)
	client := fake.NewClientset(mine, theirs)
	reports := make(chan report, 16)
	w := &gateway.PlacementWatcher{
		Client: client,
		Scope:  gateway.ShadowScope{Node: "hpc-a", CredentialsNamespace: "sluice-system"},
		OnChange: func(r types.NamespacedName, to *gateway.Placement) {
			reports <- report{r, to}
		},
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	cms := client.CoreV1().ConfigMaps("team-shadow")
	update := func(cm *corev1.ConfigMap, set func(map[string]string)) {
		t.Helper()
		cm, err := cms.Get(ctx, cm.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		set(cm.Data)
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(want report) {
		t.Helper()
		select {
		case got := <-reports:
			if got.record != want.record || (got.to == nil) != (want.to == nil) || (got.to != nil && *got.to != *want.to) {
				t.Errorf("reported %v %v; want %v %v", got.record, got.to, want.record, want.to)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no report of %v", want.record)
		}
	}
	// The informer lists before it watches: updates made before it has
	// are not seen as updates. Wait until an update is.
	rec := types.NamespacedName{Namespace: "team-shadow", Name: mine.Name}
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		update(mine, func(d map[string]string) { d[shadow.JobKey] = "warm-" + string(rune('a'+i%26)) })
		select {
		case <-reports:
		case <-time.After(100 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("the watcher reported no update")
			}
			continue
		}
		break
	}
	// Drained of the warm-up's reports, back where it started.
	for quiet := false; !quiet; {
		select {
		case <-reports:
		case <-time.After(300 * time.Millisecond):
			quiet = true
		}
	}
	update(mine, func(d map[string]string) { d[shadow.JobKey] = first.Job })
	expect(report{rec, &first})

	update(mine, func(d map[string]string) { d[shadow.TunnelsKey] = "2" })
	update(theirs, func(d map[string]string) { d[shadow.NodeKey] = "node9" })
	other := nodeConfigMap("s1", "hpc-a", first)
	other.Name = "s1-known-hosts"
	if _, err := cms.Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	update(other, func(d map[string]string) { d[shadow.NodeKey] = "node9" })

	requeued := gateway.Placement{Node: "node2", Job: "4242", SocketDir: "/tmp/sluice-sock/p-2"}
	update(mine, func(d map[string]string) {
		d[shadow.NodeKey], d[shadow.JobKey], d[shadow.SocketDirKey] = requeued.Node, requeued.Job, requeued.SocketDir
	})
	expect(report{rec, &requeued})
	if err := cms.Delete(ctx, mine.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(report{rec, nil})
	select {
	case r := <-reports:
		t.Errorf("unexpected report %v %v", r.record, r.to)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestPlacementWatcherNeedsConfig(t *testing.T) {
	for _, w := range []*gateway.PlacementWatcher{
		{Scope: gateway.ShadowScope{Node: "hpc-a", CredentialsNamespace: "sluice-system"}, OnChange: func(types.NamespacedName, *gateway.Placement) {}},
		{Client: fake.NewClientset(), Scope: gateway.ShadowScope{Node: "hpc-a", CredentialsNamespace: "sluice-system"}},
		{Client: fake.NewClientset(), Scope: gateway.ShadowScope{Node: "", CredentialsNamespace: "sluice-system"}, OnChange: func(types.NamespacedName, *gateway.Placement) {}},
	} {
		if err := w.Run(t.Context()); err == nil {
			t.Errorf("Run with %+v: no error", w)
		}
	}
}

//go:build rig

package shadow

import (
	"context"
	"testing"

	"github.com/sluice-hpc/sluice/internal/config"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRigPlacementAdmitted: a placement of the kinds the configuration
// accepts (config's TestShadowPodKeys), at the edges of what it accepts (an empty Key with Exists, a qualified key with
// a prefix, an empty value, NoExecute with seconds), gives a shadow
// Deployment the rig's API server validates and admits (server-side dry
// run), so that a site's keys fail at sluice-vk's start, not at each shadow.
func TestRigPlacementAdmitted(t *testing.T) {
	c := rigClient(t)
	ns := "placement-" + rigSuffix()
	makeNamespace(t, c, ns)

	thirty := int64(30)
	n := config.Network{
		ShadowImagePullSecrets: []string{"regcred", "team.registry"},
		ShadowNodeSelector:     map[string]string{"node-role.example.org/shadows": "", "zone": "edge-1"},
		ShadowTolerations: []config.ShadowToleration{
			{Operator: "Exists"},
			{Key: "example.org/dedicated", Value: "shadows", Effect: "NoSchedule"},
			{Key: "node.kubernetes.io/unreachable", Operator: "Exists", Effect: "NoExecute", Seconds: &thirty},
		},
	}
	s := testSpec()
	s.TenantNamespace = ns
	s.PullSecrets, s.NodeSelector, s.Tolerations = placement(n)
	objs, err := s.Build(testPod(ns, "notebook", withPorts("8080")))
	if err != nil {
		t.Fatal(err)
	}
	d := objs.Deployment
	d.OwnerReferences = nil // the test pod does not exist
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	got, err := c.AppsV1().Deployments(ns).Create(context.Background(), d, dry)
	if err != nil {
		t.Fatalf("dry-run create of the shadow Deployment: %v", err)
	}
	if ps := got.Spec.Template.Spec; len(ps.Tolerations) != 3 || len(ps.ImagePullSecrets) != 2 || ps.NodeSelector["zone"] != "edge-1" {
		t.Errorf("the API server kept %v %v %v", ps.Tolerations, ps.ImagePullSecrets, ps.NodeSelector)
	}
}

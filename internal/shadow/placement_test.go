package shadow

import (
	"reflect"
	"testing"

	"github.com/sluice-hpc/sluice/internal/config"
	corev1 "k8s.io/api/core/v1"
)

// TestPlacement: the site's pull Secrets, node selector and tolerations
// reach the shadow pod; with none set the pod spec has none (nil, so the
// stamp of a shadow made before them is unchanged).
func TestPlacement(t *testing.T) {
	pod := testPod("science", "notebook", withPorts("8080"))
	pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "team-reg"}, {Name: "regcred"}}
	before, err := testSpec().Build(pod)
	if err != nil {
		t.Fatal(err)
	}
	if ps := before.Deployment.Spec.Template.Spec; ps.NodeSelector != nil || ps.Tolerations != nil || ps.ImagePullSecrets != nil {
		t.Errorf("no site placement: got %v %v %v", ps.NodeSelector, ps.Tolerations, ps.ImagePullSecrets)
	}

	thirty := int64(30)
	c := &config.Config{Network: config.Network{
		ShadowImagePullSecrets: []string{"regcred"},
		ShadowNodeSelector:     map[string]string{"zone": "edge"},
		ShadowTolerations:      []config.ShadowToleration{{Key: "dedicated", Value: "sluice", Effect: "NoSchedule"}, {Operator: "Exists", Effect: "NoExecute", Seconds: &thirty}},
	}}
	s := testSpec()
	s.PullSecrets, s.NodeSelector, s.Tolerations = placement(c.Network)
	objs, err := s.Build(pod)
	if err != nil {
		t.Fatal(err)
	}
	ps := objs.Deployment.Spec.Template.Spec
	if want := []corev1.LocalObjectReference{{Name: "regcred"}}; !reflect.DeepEqual(ps.ImagePullSecrets, want) {
		t.Errorf("imagePullSecrets %v; want %v", ps.ImagePullSecrets, want)
	}
	if !reflect.DeepEqual(ps.NodeSelector, map[string]string{"zone": "edge"}) {
		t.Errorf("nodeSelector %v", ps.NodeSelector)
	}
	want := []corev1.Toleration{
		{Key: "dedicated", Value: "sluice", Effect: corev1.TaintEffectNoSchedule},
		{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &thirty},
	}
	if !reflect.DeepEqual(ps.Tolerations, want) {
		t.Errorf("tolerations %v; want %v", ps.Tolerations, want)
	}
	if objs.Deployment.Annotations[annotationSpecHash] == before.Deployment.Annotations[annotationSpecHash] {
		t.Error("a new placement keeps the shadow's stamp: the running shadow would not follow it")
	}
	// the Spec's maps and lists are not shared with the shadow's
	ps.NodeSelector["zone"] = "x"
	if s.NodeSelector["zone"] != "edge" {
		t.Error("the shadow's nodeSelector is the Spec's own map")
	}
	// a kept container's pull Secrets come after the site's, none twice
	if got, want := s.pullSecrets(pod.Spec.ImagePullSecrets), []corev1.LocalObjectReference{{Name: "regcred"}, {Name: "team-reg"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("pullSecrets %v; want %v", got, want)
	}
}

// TestSpecFromPlacement: SpecFrom carries the configuration's keys.
func TestSpecFromPlacement(t *testing.T) {
	c := &config.Config{Network: config.Network{ShadowImagePullSecrets: []string{"regcred"}, ShadowNodeSelector: map[string]string{"zone": "edge"},
		ShadowTolerations: []config.ShadowToleration{{Key: "k", Operator: "Exists"}}}}
	s := SpecFrom(c, "sluice-system")
	if len(s.PullSecrets) != 1 || s.PullSecrets[0].Name != "regcred" || s.NodeSelector["zone"] != "edge" ||
		len(s.Tolerations) != 1 || s.Tolerations[0].Operator != corev1.TolerationOpExists {
		t.Errorf("SpecFrom: %v %v %v", s.PullSecrets, s.NodeSelector, s.Tolerations)
	}
}

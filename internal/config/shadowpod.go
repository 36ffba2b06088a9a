package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ShadowToleration is a toleration of the shadow pods, with the keys of a
// Kubernetes toleration.
type ShadowToleration struct {
	Key      string `yaml:"Key"`
	Operator string `yaml:"Operator"`
	Value    string `yaml:"Value"`
	Effect   string `yaml:"Effect"`
	// Seconds is how long a NoExecute taint is tolerated; nil is for ever.
	Seconds *int64 `yaml:"Seconds"`
}

// validateShadowPod checks what the shadow pods' spec takes from the
// configuration, so that a wrong key stops sluice-vk at start and not each
// shadow at the API server.
func (n *Network) validateShadowPod(bad reporter) {
	for _, s := range n.ShadowImagePullSecrets {
		if msgs := validation.IsDNS1123Subdomain(s); len(msgs) > 0 {
			bad("Network.ShadowImagePullSecrets", "%q: %s", s, strings.Join(msgs, "; "))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(n.ShadowNodeSelector)) {
		v := n.ShadowNodeSelector[k]
		if msgs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(msgs) > 0 {
			bad("Network.ShadowNodeSelector", "%s=%s: %s", k, v, strings.Join(msgs, "; "))
		}
	}
	for i, t := range n.ShadowTolerations {
		if err := t.validate(); err != nil {
			bad("Network.ShadowTolerations", "item %d: %v", i, err)
		}
	}
}

func (t ShadowToleration) validate() error {
	if t.Key != "" {
		if msgs := validation.IsQualifiedName(t.Key); len(msgs) > 0 {
			return fmt.Errorf("key %q: %s", t.Key, strings.Join(msgs, "; "))
		}
	}
	if !allowed("Network.ShadowTolerations[].Operator", t.Operator) {
		return fmt.Errorf("operator must be Equal or Exists, got %q", t.Operator)
	}
	if !allowed("Network.ShadowTolerations[].Effect", t.Effect) {
		return fmt.Errorf("effect must be NoSchedule, PreferNoSchedule or NoExecute, got %q", t.Effect)
	}
	switch t.Operator {
	case "", "Equal":
		if t.Key == "" {
			return fmt.Errorf("an empty Key needs Operator Exists")
		}
		if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
			return fmt.Errorf("value %q: %s", t.Value, strings.Join(msgs, "; "))
		}
	case "Exists":
		if t.Value != "" {
			return fmt.Errorf("operator Exists takes no Value")
		}
	}
	if t.Effect != "NoExecute" && t.Seconds != nil {
		return fmt.Errorf("seconds need Effect NoExecute")
	}
	return nil
}

package config

import (
	"reflect"
	"strings"
	"testing"
)

// withNetwork is minimal with keys (indented) added to Network.
func withNetwork(keys string) string {
	return strings.Replace(minimal, "Network:\n", "Network:\n"+keys, 1)
}

func TestShadowPodKeys(t *testing.T) {
	c, err := Parse([]byte(withNetwork(`  ShadowImagePullSecrets: [regcred]
  ShadowNodeSelector: {node-role.example.org/edge: "true"}
  ShadowTolerations:
    - {Key: dedicated, Value: sluice, Effect: NoSchedule}
    - {Operator: Exists, Effect: NoExecute, Seconds: 30}
`)))
	if err != nil {
		t.Fatal(err)
	}
	n := c.Network
	thirty := int64(30)
	want := []ShadowToleration{{Key: "dedicated", Value: "sluice", Effect: "NoSchedule"}, {Operator: "Exists", Effect: "NoExecute", Seconds: &thirty}}
	if !reflect.DeepEqual(n.ShadowImagePullSecrets, []string{"regcred"}) ||
		n.ShadowNodeSelector["node-role.example.org/edge"] != "true" || !reflect.DeepEqual(n.ShadowTolerations, want) {
		t.Errorf("got %q %v %+v", n.ShadowImagePullSecrets, n.ShadowNodeSelector, n.ShadowTolerations)
	}
}

func TestShadowPodKeysRefused(t *testing.T) {
	for _, tc := range []struct{ keys, want string }{
		{"  ShadowImagePullSecrets: [Reg_Cred]\n", `Network.ShadowImagePullSecrets: "Reg_Cred"`},
		{"  ShadowNodeSelector: {\"bad key\": x}\n", "Network.ShadowNodeSelector: bad key=x"},
		{"  ShadowNodeSelector: {zone: \"a b\"}\n", "Network.ShadowNodeSelector: zone=a b"},
		{"  ShadowTolerations: [{Key: a, Operator: Maybe}]\n", "Network.ShadowTolerations: item 0: operator must be Equal or Exists"},
		{"  ShadowTolerations: [{Value: x}]\n", "Network.ShadowTolerations: item 0: an empty Key needs Operator Exists"},
		{"  ShadowTolerations: [{Key: a, Operator: Exists, Value: x}]\n", "operator Exists takes no Value"},
		{"  ShadowTolerations: [{Key: a, Effect: NoSchedule, Seconds: 5}]\n", "seconds need Effect NoExecute"},
		{"  ShadowTolerations: [{Key: a, Effect: Sometimes}]\n", "effect must be"},
		{"  ShadowTolerations: [{Key: -a}]\n", `key "-a"`},
	} {
		_, err := Parse([]byte(withNetwork(tc.keys)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q): err = %v; want one containing %q", tc.keys, err, tc.want)
		}
	}
}

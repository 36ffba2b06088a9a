package chart

import (
	"strings"
	"testing"
)

// TestWrongValuesRefused: values.schema.json refuses a wrong type, an
// unknown key and a value outside its set at `helm template` (as at
// `helm install`), naming the key.
func TestWrongValuesRefused(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  []string
		want string // the key, as helm names it
	}{
		{"port is a string", []string{"--set-string", "config.Network.SSH.Port=twenty-two"}, "/config/Network/SSH/Port"},
		{"unknown config key", []string{"--set", "config.Network.SSH.Bogus=1"}, "Bogus"},
		{"unknown top key", []string{"--set", "replica=2"}, "replica"},
		{"replicas not a number", []string{"--set-string", "replicas=two"}, "/replicas"},
		{"lease duration not a duration", []string{"--set", "leaderElection.leaseDuration=15"}, "/leaderElection/leaseDuration"},
		{"runtime not known", []string{"--set", "config.Site.ContainerRuntime=docker"}, "/config/Site/ContainerRuntime"},
		{"log format", []string{"--set", "log.format=xml"}, "/log/format"},
		{"network policy peer not a peer", []string{"--set", "networkPolicy.kubeletAPIFrom[0].cidr=10.0.0.0/8"}, "/networkPolicy/kubeletAPIFrom/0"},
		{"admission policy not a boolean", []string{"--set-string", "admissionPolicy.enabled=yes"}, "/admissionPolicy/enabled"},
		{"tunnel flag not a bool", []string{"--set-string", "config.Network.EnableTunnel=yes"}, "/config/Network/EnableTunnel"},
		{"digest is a tag", []string{"--set", "image.digest=v0.1.0"}, "/image/digest"},
		{"pull secret without a name", []string{"--set-json", `imagePullSecrets=[{"secret":"regcred"}]`}, "/imagePullSecrets/0"},
		{"extra arg not a string", []string{"--set-json", `extraArgs=[1]`}, "/extraArgs/0"},
		{"extra mount without a path", []string{"--set-json", `extraVolumeMounts=[{"name":"ca"}]`}, "/extraVolumeMounts/0"},
		{"tenant namespace not a label", []string{"--set", "config.Network.TenantNamespace=Team_A"}, "/config/Network/TenantNamespace"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := template(t, append([]string{"-f", values("default")}, tt.set...)...)
			if err == nil {
				t.Fatalf("helm template accepted %v:\n%.400s", tt.set, out)
			}
			if !strings.Contains(err.Error(), "schema") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want a schema error naming %s", err, tt.want)
			}
		})
	}
}

// TestRequiredValues: the chart names what a site must give.
func TestRequiredValues(t *testing.T) {
	_, err := template(t)
	if err == nil {
		t.Fatal("helm template with no site accepted")
	}
	for _, key := range []string{"DataRoot", "LoginHost", "User"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("got %v; want it to name %s", err, key)
		}
	}
	_, err = template(t, "-f", values("default"), "--set", "credentials.knownHosts=")
	if err == nil || !strings.Contains(err.Error(), "credentials.knownHosts") {
		t.Errorf("no known hosts: got %v; want an error naming credentials.knownHosts", err)
	}
}

// TestReplicasNeedLeaderElection: two replicas without leader election would
// both run the node; the chart refuses them.
func TestReplicasNeedLeaderElection(t *testing.T) {
	_, err := template(t, "-f", values("default"), "--set", "replicas=2")
	if err == nil || !strings.Contains(err.Error(), "leaderElection.enabled") {
		t.Errorf("got %v; want a refusal naming leaderElection.enabled", err)
	}
}

// TestEnumValuesAccepted: the schema takes every value sluice-vk takes,
// its enums generated from the configuration (enroot was once refused).
func TestEnumValuesAccepted(t *testing.T) {
	for _, set := range [][]string{
		{"--set", "config.Site.ContainerRuntime=enroot"},
		{"--set", "config.Node.GPUResource=amd.com/gpu"},
		{"--set", "config.Network.SSH.Reverse.NodeExec=srun"},
	} {
		if out, err := template(t, append([]string{"-f", values("default")}, set...)...); err != nil {
			t.Errorf("helm template refused %v: %v\n%.400s", set, err, out)
		}
	}
}

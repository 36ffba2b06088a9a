package testrig

import (
	"maps"
	"testing"
)

func TestSite2ShowsTheSecondSite(t *testing.T) {
	r := &Rig{vars: map[string]string{
		"RIG_DIR":                 "/var/lib/sluice-rig",
		"RIG_LOGIN_ADDR":          "10.251.1.2",
		"RIG_KNOWN_HOSTS":         "/rig/known_hosts",
		"RIG_BASTION_ADDR":        "10.251.3.2",
		"RIG_KRB5_REALM":          "SLUICE.RIG",
		"RIG_USER":                "alice",
		"RIG_KEY":                 "/rig/keys/alice",
		"RIG_REDIS_ADDR":          "127.0.0.1:6379",
		"RIG_KUBECONFIG":          "/rig/kube/admin.kubeconfig",
		"RIG_K8S_NODE":            "rig-node",
		"RIG_SITE2_LOGIN_ADDR":    "10.251.21.2",
		"RIG_SITE2_KNOWN_HOSTS":   "/rig/site2_known_hosts",
		"RIG_SITE2_ROOT":          "/rig/site2/root",
		"RIG_SITE2_DATA_ROOT":     "/home/alice/.sluice",
		"RIG_SITE2_SLURM_CONF":    "/etc/slurm/slurm.conf",
		"RIG_KUBE_CA":             "/rig/kube/pki/ca.crt",
		"RIG_SOCKET_DIR_ROOT":     "/tmp/sluice-sock",
		"RIG_SSHD_NODE_OVERRIDE":  "/rig/etc/sshd_node.override.conf",
		"RIG_SITE2_OTHER_SETTING": "x",
	}}
	s := r.Site2(t)
	if s.svcPrefix != "site2-" {
		t.Errorf("Site2 restarts services named %q…; want site2-…", s.svcPrefix)
	}
	got := s.vars
	want := map[string]string{
		"RIG_DIR":           "/var/lib/sluice-rig",
		"RIG_LOGIN_ADDR":    "10.251.21.2",
		"RIG_KNOWN_HOSTS":   "/rig/site2_known_hosts",
		"RIG_USER":          "alice",
		"RIG_KEY":           "/rig/keys/alice",
		"RIG_REDIS_ADDR":    "127.0.0.1:6379",
		"RIG_KUBECONFIG":    "/rig/kube/admin.kubeconfig",
		"RIG_KUBE_CA":       "/rig/kube/pki/ca.crt",
		"RIG_K8S_NODE":      "rig-node",
		"RIG_ROOT":          "/rig/site2/root",
		"RIG_DATA_ROOT":     "/home/alice/.sluice",
		"RIG_SLURM_CONF":    "/etc/slurm/slurm.conf",
		"RIG_OTHER_SETTING": "x",
	}
	if !maps.Equal(got, want) {
		t.Errorf("Site2 vars = %v\nwant %v", got, want)
	}
	if p := r.Site2(t).HostPath("/home/alice/.sluice/x"); p != "/rig/site2/root/home/alice/.sluice/x" {
		t.Errorf("HostPath on site 2 = %s", p)
	}
	if p := r.HostPath("/home/alice/.sluice/x"); p != "/home/alice/.sluice/x" {
		t.Errorf("HostPath on site 1 = %s", p)
	}
}

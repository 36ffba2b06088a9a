package shadow

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/annotations"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func bastionSpec() Spec {
	s := testSpec()
	s.Bastion = Bastion{Host: "bastion.example.org", Port: 2022, User: "alice-jump", HostKeys: "hpc-bastion-keys", KeySecret: "hpc-bastion-key"}
	s.ReconnectSpread, s.ReconnectWindowMax = 200*time.Millisecond, 30*time.Second
	return s
}

func TestBuildBastionAndSpread(t *testing.T) {
	objs, err := bastionSpec().Build(testPod("ns", "p", withPorts("80"), withAnnotation(annotations.ReverseForwards, "redis:6379")))
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	ps := objs.Deployment.Spec.Template.Spec
	want := []string{
		"--bastion=bastion.example.org:2022",
		"--bastion-known-hosts=/etc/sluice/bastion-hosts/known_hosts",
		"--bastion-user=alice-jump",
		"--bastion-key=/etc/sluice/bastion-ssh/ssh-privatekey",
		"--reconnect-spread=200ms",
		"--tunnels-file=/etc/sluice/node/tunnels",
		"--reconnect-window-max=30s",
	}
	for _, name := range []string{ContainerForward, ContainerReverse} {
		c := hasArgs(t, objs, name, want)
		mounts := mountsOf(c)
		if mounts[volBastionHosts] != mountBastionHosts || mounts[volBastionSSH] != mountBastionSSH {
			t.Errorf("%s mounts %v; want the bastion's known_hosts and key", name, mounts)
		}
	}
	vols := map[string]corev1.Volume{}
	for _, v := range ps.Volumes {
		vols[v.Name] = v
	}
	if cm := vols[volBastionHosts].ConfigMap; cm == nil || cm.Name != "hpc-bastion-keys" {
		t.Errorf("bastion known_hosts volume %+v; want ConfigMap hpc-bastion-keys", vols[volBastionHosts])
	}
	if sec := vols[volBastionSSH].Secret; sec == nil || sec.SecretName != "hpc-bastion-key" || *sec.DefaultMode != keyMode {
		t.Errorf("bastion key volume %+v; want Secret hpc-bastion-key, mode %o", vols[volBastionSSH], keyMode)
	}
}

func TestBuildWithoutBastion(t *testing.T) {
	objs, err := testSpec().Build(testPod("ns", "p", withPorts("80")))
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	c := container(objs, ContainerForward)
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--bastion") || strings.HasPrefix(a, "--reconnect") || strings.HasPrefix(a, "--tunnels") {
			t.Errorf("arg %s without a bastion or spread", a)
		}
	}
	if got := volumeNamesOf(objs.Deployment.Spec.Template.Spec.Volumes); slices.Contains(got, volBastionHosts) {
		t.Errorf("volumes %v hold the bastion's without a bastion", got)
	}
}

func TestBastionSpecValidate(t *testing.T) {
	if err := bastionSpec().Validate(); err != nil {
		t.Fatalf("bastionSpec().Validate() = %v", err)
	}
	for _, tc := range []struct {
		field string
		edit  func(*Spec)
	}{
		{"Bastion.Host", func(s *Spec) { s.Bastion.Host = "-oProxyCommand=x" }},
		{"Bastion.Host", func(s *Spec) { s.Bastion.Host = "" }},
		{"Bastion.Port", func(s *Spec) { s.Bastion.Port = 0 }},
		{"Bastion.User", func(s *Spec) { s.Bastion.User = "a b" }},
		{"Bastion.HostKeys", func(s *Spec) { s.Bastion.HostKeys = "" }},
		{"Bastion.KeySecret", func(s *Spec) { s.Bastion.KeySecret = "Bad_Name" }},
		{"ReconnectSpread", func(s *Spec) { s.ReconnectSpread = -time.Second }},
		{"ReconnectWindowMax", func(s *Spec) { s.ReconnectWindowMax = time.Millisecond }},
	} {
		s := bastionSpec()
		tc.edit(&s)
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), "shadow spec: "+tc.field+":") {
			t.Errorf("%s: Validate() = %v; want an error naming it", tc.field, err)
		}
	}
}

func TestSetNodeCountsTunnels(t *testing.T) {
	ctx := context.Background()
	c := newFake()
	m, _ := newManager(t, c, testSpec())
	pods := []*corev1.Pod{webPod(), testPod("science", "web2", withPorts("80"), withUID("0b5e3c0e-0000-4c8e-9d55-7f2a0a4f3c12"))}
	for _, p := range pods {
		if _, err := m.Ensure(ctx, p); err != nil {
			t.Fatalf("Ensure: %v", err)
		}
	}
	tunnels := func(p *corev1.Pod) string {
		cm, err := c.CoreV1().ConfigMaps("science-shadow").Get(ctx, Name(p)+"-node", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data[TunnelsKey]
	}
	for i, want := range []string{"1", "2"} {
		if err := m.SetNode(ctx, pods[i], "node1", "7", ""); err != nil {
			t.Fatal(err)
		}
		if got := tunnels(pods[i]); got != want {
			t.Errorf("pod %d: tunnels = %q; want %q", i, got, want)
		}
	}
	// Setting the node again does not count a pod twice; a deleted
	// shadow is no longer counted.
	if err := m.Delete(ctx, pods[1]); err != nil {
		t.Fatal(err)
	}
	if err := m.SetNode(ctx, pods[0], "node2", "7", ""); err != nil {
		t.Fatal(err)
	}
	if got := tunnels(pods[0]); got != "1" {
		t.Errorf("after a delete: tunnels = %q; want 1", got)
	}
	if !reflect.DeepEqual(m.tunnels, map[types.UID]bool{pods[0].UID: true}) {
		t.Errorf("tunnels known %v; want only %s", m.tunnels, pods[0].UID)
	}
}

func TestReplicateBastionCredentials(t *testing.T) {
	ctx := context.Background()
	s := bastionSpec()
	s.ReplicateCredentials = true
	c := newFake(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "sluice-system", Name: "hpc-ssh-key"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "sluice-system", Name: "hpc-bastion-key"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "sluice-system", Name: "hpc-known-hosts"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "sluice-system", Name: "hpc-node-keys"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "sluice-system", Name: "hpc-bastion-keys"}},
	)
	m, _ := newManager(t, c, s)
	pod := webPod()
	if _, err := m.Ensure(ctx, pod); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if _, err := c.CoreV1().ConfigMaps("science-shadow").Get(ctx, "hpc-bastion-keys", metav1.GetOptions{}); err != nil {
		t.Errorf("bastion known_hosts not copied: %v", err)
	}
	if _, err := c.CoreV1().Secrets("science-shadow").Get(ctx, "hpc-bastion-key", metav1.GetOptions{}); err != nil {
		t.Errorf("bastion key not copied: %v", err)
	}
}

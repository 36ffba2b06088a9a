package shadow

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/annotations"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// throughGateway is testSpec with the gateway on, and a bastion with a key
// of its own: nothing of either may reach a shadow.
func throughGateway() Spec {
	s := testSpec()
	s.GatewayAddress, s.GatewayHostKeys = "sluice-gateway.sluice-system.svc:2222", "sluice-gateway-host-keys"
	s.Bastion = Bastion{Host: "bastion.example", Port: 22, HostKeys: "bastion-keys", KeySecret: "bastion-key"}
	return s
}

// TestGatewayBuild: with the gateway, the tunnel containers prove the
// shadow with a projected token of sluice's audience and check the
// gateway's host keys; no Secret is mounted, no site flag is passed.
func TestGatewayBuild(t *testing.T) {
	pod := webPod()
	pod.Annotations[annotations.ReverseSocksPort] = "1080"
	// Pacing is the gateway's: a shadow through it passes none.
	gw := throughGateway()
	gw.ReconnectSpread = 200 * time.Millisecond
	objs, err := gw.Build(pod)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	for _, name := range []string{ContainerForward, ContainerReverse} {
		c := hasArgs(t, objs, name, []string{
			"--gateway=sluice-gateway.sluice-system.svc:2222",
			"--gateway-token=/var/run/secrets/sluice/gateway/token",
			"--gateway-known-hosts=/etc/sluice/gateway-hosts/known_hosts",
			"--node-file=/etc/sluice/node/node",
		})
		for _, a := range c.Args {
			// nor the relay's forward entry: the gateway goes through it
			for _, site := range []string{"--login", "--user", "--key", "--certificate", "--keytab", "--bastion", "--node-known-hosts", "--reconnect-spread", "--tunnels-file", "--entry-dir-file"} {
				if strings.HasPrefix(a, site) {
					t.Errorf("%s passes %s through the gateway", name, a)
				}
			}
		}
		want := map[string]string{volGatewayToken: mountGatewayToken, volGatewayHosts: mountGatewayHosts, volNode: mountNode}
		if got := mountsOf(c); !maps.Equal(got, want) {
			t.Errorf("%s mounts %v; want %v", name, got, want)
		}
	}
	spec := objs.Deployment.Spec.Template.Spec
	if got := volumeNamesOf(spec.Volumes); !slices.Equal(got, []string{volGatewayToken, volGatewayHosts, volNode}) {
		t.Errorf("volumes %v", got)
	}
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			t.Errorf("volume %s mounts Secret %s", v.Name, v.Secret.SecretName)
		}
	}
	tok := spec.Volumes[0].Projected
	if tok == nil || len(tok.Sources) != 1 || tok.Sources[0].ServiceAccountToken == nil {
		t.Fatalf("token volume %+v", spec.Volumes[0])
	}
	if sat := tok.Sources[0].ServiceAccountToken; sat.Audience != GatewayAudience || sat.ExpirationSeconds == nil || *sat.ExpirationSeconds != 3600 || sat.Path != "token" {
		t.Errorf("token projection %+v", sat)
	}
	if spec.Volumes[1].ConfigMap == nil || spec.Volumes[1].ConfigMap.Name != "sluice-gateway-host-keys" {
		t.Errorf("gateway host keys volume %+v", spec.Volumes[1])
	}
	if a := spec.AutomountServiceAccountToken; a == nil || *a {
		t.Error("the API server's token is mounted: the gateway's is all a shadow needs")
	}

	c, err := CarriedBy(objs.Deployment)
	if err != nil || !slices.Equal(c.ForwardPorts, []int32{8080}) || !slices.Equal(c.ReversePorts, []int32{6379}) || c.SocksPort != 1080 {
		t.Errorf("CarriedBy = %+v, %v", c, err)
	}
}

// TestGatewayReplicatesNoSecret: with the gateway, Ensure copies the
// gateway's host keys into the shadow namespace and nothing else: no key,
// no bastion key, no site host keys.
func TestGatewayReplicatesNoSecret(t *testing.T) {
	ctx := context.Background()
	objs := append(originals(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "sluice-system", Name: "sluice-gateway-host-keys"},
			Data: map[string]string{"known_hosts": "sluice-gateway.sluice-system.svc ssh-ed25519 GGGG"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "sluice-system", Name: "bastion-key"}, Data: map[string][]byte{"ssh-privatekey": []byte("B")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "sluice-system", Name: "bastion-keys"}, Data: map[string]string{"known_hosts": "b"}})
	c := newFake(objs...)
	s := throughGateway()
	s.ReplicateCredentials = true
	m, _ := newManager(t, c, s)
	if _, err := m.Ensure(ctx, webPod()); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	secrets, err := c.CoreV1().Secrets("science-shadow").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sec := range secrets.Items {
		t.Errorf("secret %s copied into the shadow namespace", sec.Name)
	}
	cms, err := c.CoreV1().ConfigMaps("science-shadow").List(ctx, metav1.ListOptions{LabelSelector: CopySelector})
	if err != nil {
		t.Fatal(err)
	}
	if len(cms.Items) != 1 || cms.Items[0].Name != "sluice-gateway-host-keys" || !strings.Contains(cms.Items[0].Data["known_hosts"], "GGGG") {
		t.Errorf("copies %v; want the gateway's host keys only", cms.Items)
	}
}

// TestGatewayPublishesNoKey: on a confined node whose key Secret would be
// written from the key file, the gateway leaves it unwritten; a shadow
// waits until the gateway has published its host keys.
func TestGatewayPublishesNoKey(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "ssh-privatekey")
	writeKey(t, file, "KEY1")
	s := publishing(file)
	s.GatewayAddress, s.GatewayHostKeys = "sluice-gateway.hpc-tenant.svc:2222", "sluice-gateway-host-keys"
	// the chart's ConfigMap, which the gateway has not filled yet
	hosts := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "hpc-tenant", Name: "sluice-gateway-host-keys"}}
	c := newFake(hosts)
	m, _ := newManager(t, c, s)
	pod := testPod("hpc-tenant", "web", withPorts("8080"))
	if _, err := m.Ensure(ctx, pod); err == nil || !strings.Contains(err.Error(), "the gateway has not published its host keys in hpc-tenant/sluice-gateway-host-keys") {
		t.Fatalf("Ensure before the gateway published its host keys: %v; want the pod to wait", err)
	}
	if d, err := c.AppsV1().Deployments("hpc-tenant").List(ctx, metav1.ListOptions{}); err != nil || len(d.Items) != 0 {
		t.Errorf("shadows made before the host keys: %v, %v; want none", d, err)
	}
	hosts.Data = map[string]string{"known_hosts": "[sluice-gateway.hpc-tenant.svc]:2222 ssh-ed25519 GGGG\n"}
	if _, err := c.CoreV1().ConfigMaps("hpc-tenant").Update(ctx, hosts, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Ensure(ctx, pod); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	secrets, err := c.CoreV1().Secrets("hpc-tenant").List(ctx, metav1.ListOptions{})
	if err != nil || len(secrets.Items) != 0 {
		t.Errorf("secrets in the tenant namespace: %v, %v; want none", secrets, err)
	}
}

func TestGatewayValidate(t *testing.T) {
	for _, addr := range []string{"gw", "gw:0", "gw:70000", "gw:ssh", "-oProxyCommand=x:22", "[fe80::1%eth0]:22"} {
		s := throughGateway()
		s.GatewayAddress = addr
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "GatewayAddress") {
			t.Errorf("GatewayAddress %q: %v; want refused", addr, err)
		}
	}
	s := throughGateway()
	s.GatewayHostKeys = ""
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "GatewayHostKeys") {
		t.Errorf("no GatewayHostKeys: %v; want refused", err)
	}
	if err := throughGateway().Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	// the chart names none of the site's credentials with the gateway
	s = throughGateway()
	s.KeySecret, s.LoginHostKeys, s.NodeHostKeys = "", "", ""
	if err := s.Validate(); err != nil {
		t.Errorf("no site credential named: %v; want accepted through the gateway", err)
	}
	s.GatewayAddress = ""
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "KeySecret") {
		t.Errorf("no site credential named, no gateway: %v; want KeySecret refused", err)
	}
}

func TestCarriedByRefusesMalformed(t *testing.T) {
	objs, err := testSpec().Build(webPod())
	if err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{"--forward=0=redis:6379", "--forward=x", "--forward=65536=a:1", "--socks-port=-1"} {
		d := objs.Deployment.DeepCopy()
		rev := &d.Spec.Template.Spec.Containers[slices.IndexFunc(d.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == ContainerReverse })]
		rev.Args = append(rev.Args, arg)
		if c, err := CarriedBy(d); err == nil {
			t.Errorf("CarriedBy with %s = %+v; want an error", arg, c)
		}
	}
}

// TestGatewayRefusesSameNamespace: a pod asking for its shadow in its own
// namespace, which the gateway would not trust, is refused with the way
// out; one an operator trusts is not.
func TestGatewayRefusesSameNamespace(t *testing.T) {
	pod := webPod()
	pod.Annotations[annotations.ShadowSameNS] = "true"
	_, err := throughGateway().Build(pod)
	if err == nil || !strings.Contains(err.Error(), "drop the annotation (the shadow goes to science-shadow)") {
		t.Errorf("Build = %v; want the pod refused", err)
	}
	s := throughGateway()
	s.TrustedNamespaces = []string{"science"}
	if objs, err := s.Build(pod); err != nil || objs.Namespace != "science" {
		t.Errorf("in a trusted namespace: %v, %v", objs, err)
	}
}

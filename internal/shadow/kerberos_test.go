package shadow

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/config"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kerberosSpec is testSpec logging in with a keytab: no key Secret.
func kerberosSpec() Spec {
	s := testSpec()
	s.KeySecret = ""
	s.Kerberos = Kerberos{Principal: "alice@SLUICE.RIG", KeytabSecret: "hpc-keytab", Realm: "SLUICE.RIG",
		KDCs: []string{"10.251.1.2:88", "kdc2.example.org"}}
	return s
}

func TestBuildKerberos(t *testing.T) {
	objs, err := kerberosSpec().Build(testPod("ns", "p", withPorts("80"), withAnnotation(annotations.ReverseForwards, "redis:6379")))
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	want := []string{
		"--keytab=/etc/sluice/krb5/keytab",
		"--principal=alice@SLUICE.RIG",
		"--realm=SLUICE.RIG",
		"--kdc=10.251.1.2:88,kdc2.example.org",
	}
	for _, name := range []string{ContainerForward, ContainerReverse} {
		c := hasArgs(t, objs, name, want)
		for _, a := range c.Args {
			if strings.HasPrefix(a, "--key=") || strings.HasPrefix(a, "--certificate=") {
				t.Errorf("%s has %s with Kerberos", name, a)
			}
		}
		mounts := mountsOf(c)
		if mounts[volKeytab] != mountKeytab {
			t.Errorf("%s mounts %v; want %s at %s", name, mounts, volKeytab, mountKeytab)
		}
		if _, ok := mounts[volSSH]; ok {
			t.Errorf("%s mounts the key volume with Kerberos", name)
		}
	}
	ps := objs.Deployment.Spec.Template.Spec
	vols := map[string]corev1.Volume{}
	for _, v := range ps.Volumes {
		vols[v.Name] = v
	}
	if _, ok := vols[volSSH]; ok {
		t.Errorf("volumes %v hold the key Secret with Kerberos", volumeNamesOf(ps.Volumes))
	}
	sec := vols[volKeytab].Secret
	if sec == nil || sec.SecretName != "hpc-keytab" || *sec.DefaultMode != keyMode ||
		!slices.Equal(sec.Items, []corev1.KeyToPath{{Key: "keytab", Path: "keytab"}}) {
		t.Fatalf("keytab volume %+v; want Secret hpc-keytab, item keytab, mode %o", vols[volKeytab], keyMode)
	}
	// The tunnel reads the 0440 keytab through the pod's fsGroup.
	if fs := ps.SecurityContext.FSGroup; fs == nil || *fs != TunnelUID {
		t.Errorf("fsGroup %v; want %d", fs, TunnelUID)
	}
}

func TestBuildKerberosBastionKeepsItsKey(t *testing.T) {
	s := kerberosSpec()
	s.Bastion = Bastion{Host: "bastion.example.org", Port: 22, HostKeys: "hpc-bastion-keys", KeySecret: "hpc-bastion-key"}
	objs, err := s.Build(testPod("ns", "p", withPorts("80")))
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	c := container(objs, ContainerForward)
	for _, w := range []string{"--keytab=/etc/sluice/krb5/keytab", "--bastion-key=/etc/sluice/bastion-ssh/ssh-privatekey"} {
		if !slices.Contains(c.Args, w) {
			t.Errorf("args %v lack %s", c.Args, w)
		}
	}
	if got := volumeNamesOf(objs.Deployment.Spec.Template.Spec.Volumes); !slices.Contains(got, volBastionSSH) || !slices.Contains(got, volKeytab) {
		t.Errorf("volumes %v; want the keytab and the bastion's key", got)
	}
}

func TestKerberosSpecValidate(t *testing.T) {
	if err := kerberosSpec().Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	tests := []struct {
		field string
		edit  func(*Spec)
	}{
		{"Kerberos.Principal", func(s *Spec) { s.Kerberos.Principal = "alice --x" }},
		{"Kerberos.Principal", func(s *Spec) { s.Kerberos.Principal = "" }}, // back to a key: KeySecret is empty
		{"Kerberos.KeytabSecret", func(s *Spec) { s.Kerberos.KeytabSecret = "" }},
		{"Kerberos.Realm", func(s *Spec) { s.Kerberos.Realm = "" }},
		{"Kerberos.Realm", func(s *Spec) { s.Kerberos.Realm = "A,B" }},
		{"Kerberos.KDCs", func(s *Spec) { s.Kerberos.KDCs = nil }},
		{"Kerberos.KDCs", func(s *Spec) { s.Kerberos.KDCs = []string{"-oProxy=x"} }},
		{"Kerberos.KDCs", func(s *Spec) { s.Kerberos.KDCs = []string{"kdc:0"} }},
		{"Kerberos.KDCs", func(s *Spec) { s.Kerberos.KDCs = []string{"a,b"} }},
		{"KeySecretCertificate", func(s *Spec) { s.KeySecretCertificate = true }},
		{"KeyFile", func(s *Spec) { s.TenantNamespace, s.KeyFile = "hpc-tenant", "/etc/sluice/ssh/ssh-privatekey" }},
		{"Bastion.KeySecret", func(s *Spec) {
			s.Bastion = Bastion{Host: "bastion.example.org", Port: 22, HostKeys: "hpc-bastion-keys"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			s := kerberosSpec()
			tt.edit(&s)
			if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tt.field+":") {
				t.Errorf("Validate = %v; want an error naming %s", err, tt.field)
			}
		})
	}
}

func TestSpecFromKerberos(t *testing.T) {
	c := &config.Config{NodeName: "hpc-a"}
	h := &c.Network.SSH
	h.LoginHost, h.Port, h.User, h.KeySecret = "10.251.1.2", 22, "alice", "hpc-ssh-key"
	h.Principal, h.KeytabSecret, h.Realm, h.KDCs = "alice@SLUICE.RIG", "hpc-keytab", "SLUICE.RIG", []string{"10.251.1.2:88"}

	h.Auth = "publickey"
	if s := SpecFrom(c, "sluice-system"); s.KeySecret != "hpc-ssh-key" || s.Kerberos.on() {
		t.Errorf("publickey: KeySecret %q Kerberos %+v; want the key and no Kerberos", s.KeySecret, s.Kerberos)
	}
	h.Auth = "kerberos"
	s := SpecFrom(c, "sluice-system")
	want := Kerberos{Principal: "alice@SLUICE.RIG", KeytabSecret: "hpc-keytab", Realm: "SLUICE.RIG", KDCs: []string{"10.251.1.2:88"}}
	if s.KeySecret != "" || s.Kerberos.Principal != want.Principal || s.Kerberos.KeytabSecret != want.KeytabSecret ||
		s.Kerberos.Realm != want.Realm || !slices.Equal(s.Kerberos.KDCs, want.KDCs) {
		t.Errorf("kerberos: KeySecret %q Kerberos %+v; want no key and %+v", s.KeySecret, s.Kerberos, want)
	}
}

func TestReplicateKeytab(t *testing.T) {
	ctx := context.Background()
	objs := append(originals(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "sluice-system", Name: "hpc-keytab"},
		Data: map[string][]byte{"keytab": []byte("KEYTAB1")}})
	c := newFake(objs...)
	s := kerberosSpec()
	s.ReplicateCredentials = true
	m, _ := newManager(t, c, s)
	if _, err := m.Ensure(ctx, webPod()); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	kt, err := c.CoreV1().Secrets("science-shadow").Get(ctx, "hpc-keytab", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no copy of the keytab: %v", err)
	}
	if string(kt.Data["keytab"]) != "KEYTAB1" || kt.Annotations[AnnotationCopyOf] != "sluice-system/hpc-keytab" {
		t.Errorf("keytab copy: data %q meta %+v", kt.Data, kt.ObjectMeta)
	}
	if _, err := c.CoreV1().Secrets("science-shadow").Get(ctx, "hpc-ssh-key", metav1.GetOptions{}); err == nil {
		t.Errorf("the key Secret was copied with Kerberos")
	}

	// A new keytab in the original reaches the copy.
	orig, err := c.CoreV1().Secrets("sluice-system").Get(ctx, "hpc-keytab", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	orig.Data["keytab"] = []byte("KEYTAB2")
	if _, err := c.CoreV1().Secrets("sluice-system").Update(ctx, orig, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Ensure(ctx, webPod()); err != nil {
		t.Fatalf("Ensure again: %v", err)
	}
	kt, err = c.CoreV1().Secrets("science-shadow").Get(ctx, "hpc-keytab", metav1.GetOptions{})
	if err != nil || string(kt.Data["keytab"]) != "KEYTAB2" {
		t.Errorf("keytab copy after the update: %v %q; want KEYTAB2", err, kt.Data)
	}
}

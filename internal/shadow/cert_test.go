package shadow

import (
	"reflect"
	"slices"
	"testing"

	"github.com/sluice-hpc/sluice/internal/annotations"
	corev1 "k8s.io/api/core/v1"
)

// TestBuildCertificate: with KeySecretCertificate the key Secret's
// ssh-certificate is mounted beside the key and passed to every tunnel;
// without it neither appears.
func TestBuildCertificate(t *testing.T) {
	pod := testPod("science", "web", withPorts("80"), withAnnotation(annotations.ReverseForwards, "redis:6379"))
	for _, withCert := range []bool{false, true} {
		s := testSpec()
		s.KeySecretCertificate = withCert
		objs, err := s.Build(pod)
		if err != nil {
			t.Fatalf("Build (certificate %v): %v", withCert, err)
		}
		ps := objs.Deployment.Spec.Template.Spec
		wantItems := []corev1.KeyToPath{{Key: "ssh-privatekey", Path: "ssh-privatekey"}}
		if withCert {
			wantItems = append(wantItems, corev1.KeyToPath{Key: "ssh-certificate", Path: "ssh-certificate"})
		}
		for _, v := range ps.Volumes {
			if v.Name == "ssh-key" && !reflect.DeepEqual(v.Secret.Items, wantItems) {
				t.Errorf("certificate %v: ssh-key items = %+v; want %+v", withCert, v.Secret.Items, wantItems)
			}
		}
		if len(ps.Containers) != 2 {
			t.Fatalf("containers %v; want the two tunnels", containerNames(ps.Containers))
		}
		for _, c := range ps.Containers {
			has := slices.Contains(c.Args, "--certificate=/etc/sluice/ssh/ssh-certificate")
			if has != withCert {
				t.Errorf("certificate %v: %s args %q; want --certificate %v", withCert, c.Name, c.Args, withCert)
			}
		}
	}
}

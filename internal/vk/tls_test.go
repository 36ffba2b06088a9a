package vk

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"k8s.io/client-go/rest"
)

func TestSelfSigned(t *testing.T) {
	now := time.Now()
	cert, err := servingCert(config.KubeletAPI{Certificate: config.CertificateSelfSigned}, "hpc", "10.0.0.9", now)
	if err != nil {
		t.Fatalf("servingCert: %v; want a self-signed certificate", err)
	}
	c, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if err := c.VerifyHostname("10.0.0.9"); err != nil {
		t.Errorf("VerifyHostname(10.0.0.9): %v", err)
	}
	if err := c.VerifyHostname("hpc"); err != nil {
		t.Errorf("VerifyHostname(hpc): %v", err)
	}
	if !c.NotAfter.After(now.Add(300 * 24 * time.Hour)) {
		t.Errorf("got NotAfter %v; want about a year", c.NotAfter)
	}
}

func TestClientCA(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(file, []byte("FILE"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		api  config.KubeletAPI
		rc   rest.Config
		want string
	}{
		{"configured file", config.KubeletAPI{ClientCAFile: file}, rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: []byte("DATA")}}, "FILE"},
		{"kubeconfig data", config.KubeletAPI{}, rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: []byte("DATA")}}, "DATA"},
		{"kubeconfig file", config.KubeletAPI{}, rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: file}}, "FILE"},
		{"none", config.KubeletAPI{}, rest.Config{}, "error: Node.KubeletAPI.ClientCAFile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := clientCA(tt.api, &tt.rc)
			s := string(got)
			if err != nil {
				s = "error: " + err.Error()
			}
			if !strings.HasPrefix(s, tt.want) && !strings.Contains(s, strings.TrimPrefix(tt.want, "error: ")) {
				t.Errorf("got %q; want %q", s, tt.want)
			}
		})
	}
}

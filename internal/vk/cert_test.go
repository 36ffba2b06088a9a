package vk

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sluice-hpc/sluice/internal/provider"
	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"golang.org/x/crypto/ssh"
)

// TestCertExpiry: the gauge follows the certificate file, renewal
// included, and gives no sample when the file is unreadable.
func TestCertExpiry(t *testing.T) {
	ca, key := sshxtest.NewSigner(t), sshxtest.NewSigner(t)
	file := filepath.Join(t.TempDir(), "id-cert.pub")
	c := newCertExpiry(file)
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Errorf("samples with no certificate file = %d; want 0", n)
	}
	now := time.Now().Truncate(time.Second)
	for _, end := range []time.Time{now.Add(time.Hour), now.Add(25 * time.Hour)} {
		sshxtest.WriteCertificate(t, file, sshxtest.Certificate(t, ca, key.PublicKey(), ssh.UserCert, []string{"alice"}, now.Add(-time.Hour), end))
		want := "# HELP sluice_vk_ssh_certificate_valid_before_seconds When the SSH user certificate (Network.SSH.CertificateFile) expires, in seconds since the epoch; +Inf if never.\n" +
			"# TYPE sluice_vk_ssh_certificate_valid_before_seconds gauge\n" +
			"sluice_vk_ssh_certificate_valid_before_seconds{file=\"" + file + "\"} " + strconv.FormatInt(end.Unix(), 10) + "\n"
		if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
			t.Errorf("certificate valid before %s: %v", end, err)
		}
	}
}

func TestCertificateCheck(t *testing.T) {
	ca, key := sshxtest.NewSigner(t), sshxtest.NewSigner(t)
	file := filepath.Join(t.TempDir(), "id-cert.pub")
	check := certificateCheck(file, 2*time.Hour)
	now := time.Now()
	if ok, reason, msg := check(now); ok || reason != provider.ReasonCertificateNotValid || !strings.Contains(msg, file) {
		t.Errorf("no file: got %v %s %q; want not valid, naming %s", ok, reason, msg, file)
	}
	sshxtest.WriteCertificate(t, file, sshxtest.Certificate(t, ca, key.PublicKey(), ssh.UserCert, []string{"alice"}, now.Add(-time.Hour), now.Add(24*time.Hour)))
	tests := []struct {
		at     time.Time
		ok     bool
		reason string
		msg    string
	}{
		{now, true, provider.ReasonCertificateValid, "is valid until"},
		{now.Add(23 * time.Hour), true, provider.ReasonCertificateExpiresSoon, "renew it"},
		{now.Add(25 * time.Hour), false, provider.ReasonCertificateNotValid, "expired: valid from"},
	}
	for _, tt := range tests {
		ok, reason, msg := check(tt.at)
		if ok != tt.ok || reason != tt.reason || !strings.Contains(msg, tt.msg) || !strings.Contains(msg, file) {
			t.Errorf("at %s: got %v %s %q; want %v %s containing %q and the file", tt.at, ok, reason, msg, tt.ok, tt.reason, tt.msg)
		}
	}
}

package vk

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
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

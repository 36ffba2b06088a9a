package doctor

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"golang.org/x/crypto/ssh"
)

// fakeSlurm puts sbatch, squeue, scancel, sacct and srun in a directory at
// the head of PATH: each prints its version; sbatch lists the options of a
// site a release past the built-in table (--tres-per-task), and refuses
// every job, as a site whose default partition is wrong does.
func fakeSlurm(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	for _, name := range slurmCommands {
		body := `[ "$1" = --version ] && { echo "slurm 22.05.8"; exit 0; }` + "\n"
		if name == "sbatch" {
			body += `[ "$1" = --help ] && { printf '  -p, --partition=name  partition\n      --tres-per-task=list  tres\n'; exit 0; }` + "\n"
			body += `[ "$1" = --usage ] && { echo 'Usage: sbatch [--hold]'; exit 0; }` + "\n"
			body += "cat >/dev/null\necho 'sbatch: error: Batch job submission failed: Invalid partition name specified' >&2\nexit 1\n"
		} else {
			body += "exit 0\n" // no job in the queue
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestRunTestServer runs the whole doctor against an in-process SSH server
// that runs commands here: a key with a valid certificate, fake Slurm
// commands whose sbatch refuses the probe, the real df and sha256sum. The
// site lines are OK, the probe FAILs with sbatch's reason, the node lines
// are skipped and the report has failed.
func TestRunTestServer(t *testing.T) {
	fakeSlurm(t)
	srv := sshxtest.Start(t)
	ca := sshxtest.NewSigner(t)
	srv.TrustUserCA(ca.PublicKey())
	dir := t.TempDir()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	keyFile, certFile := filepath.Join(dir, "id_ed25519"), filepath.Join(dir, "id_ed25519-cert.pub")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	sshxtest.WriteCertificate(t, certFile, sshxtest.Certificate(t, ca, signer.PublicKey(), ssh.UserCert, []string{"alice"}, now.Add(-time.Hour), now.Add(24*time.Hour)))
	host, port, _ := net.SplitHostPort(srv.Addr)
	known := sshxtest.KnownHosts(t, srv.Addr, srv.HostKey.PublicKey())
	cfg, err := config.Parse([]byte(fmt.Sprintf(`NodeName: doctor-unit
Site:
  DataRoot: %s
  SocketDirRoot: /tmp/sluice-doctor-unit
  ContainerRuntime: none
Network:
  SSH:
    LoginHost: %s
    Port: %s
    User: alice
    KeyFile: %s
    CertificateFile: %s
    KnownHostsFile: %s
`, filepath.Join(dir, "data"), host, port, keyFile, certFile, known)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// the test binary stands in for a relay built for this machine, which
	// runs the site's commands
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := (&Doctor{Config: cfg, Timeout: 5 * time.Second, RelayBinary: exe}).Run(ctx)

	want := map[string]Status{
		"certificate": OK, "login": OK, "auth": OK, "login-shell": OK, "slurm": OK, "data-root": OK, "sha256sum": OK, "relay": OK,
		"probe-job": Fail, "runtime": Skip, "socket-dir": Skip, "unprivileged-ports": Skip,
		"node-sshd": Skip, "stream-local": Skip, "gateway-ports": Skip, "node-forwarding": Skip,
		"sbatch-options": OK, "openssh": OK, "login-forwarding": OK,
	}
	for name, status := range want {
		if c, ok := r.Find(name); !ok || c.Status != status {
			t.Errorf("%s: got %+v; want %s", name, c, status)
		}
	}
	if c, _ := r.Find("data-root-space"); c.Status == Fail || c.Status == Skip {
		t.Errorf("data-root-space: %+v", c)
	}
	if c, _ := r.Find("probe-job"); !strings.Contains(c.Found, "Invalid partition") || c.Fix == "" {
		t.Errorf("probe-job does not say why: %+v", c)
	}
	if c, _ := r.Find("auth"); !strings.Contains(c.Found, "with its certificate") {
		t.Errorf("auth does not name the certificate: %+v", c)
	}
	if c, _ := r.Find("sbatch-options"); !strings.Contains(c.Found, "sbatch 22.05.8: 3 options listed, 1 beyond Slurm 22.05 (tres-per-task)") {
		t.Errorf("sbatch-options: %+v", c)
	}
	if c, _ := r.Find("openssh"); !strings.Contains(c.Found, "login sshd SSH-2.0-") || !strings.Contains(c.Found, "ssh -V on the login node: ") {
		t.Errorf("openssh: %+v", c)
	}
	if c, _ := r.Find("relay"); !strings.Contains(c.Found, ": sluice-vk places "+filepath.Base(exe)) {
		t.Errorf("relay: %+v", c)
	}
	if !r.Failed() || len(r.Checks) != 20 {
		t.Errorf("failed %v with %d checks; want failed with 20", r.Failed(), len(r.Checks))
	}
	// the probe's files are gone; what sbatch listed is kept for sluice-vk
	left, _ := os.ReadDir(filepath.Join(dir, "data"))
	if len(left) != 1 || left[0].Name() != ".sbatch" {
		t.Errorf("the doctor left %v in the data root; want .sbatch only", left)
	}
}

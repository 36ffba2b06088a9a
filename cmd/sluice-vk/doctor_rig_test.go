//go:build rig

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/doctor"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"github.com/sluice-hpc/sluice/internal/testrig"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// TestRigDoctor runs `sluice-vk doctor --json` against the rig: healthy,
// every line is OK; then with one thing broken at a time — the node's or the
// login node's sshd through its override file (restored, and the sshd restarted, when each
// case ends), or the configuration — the matching line is FAIL naming the
// fix, and every other line keeps its verdict, except the lines that need
// what broke, which are SKIP: with a wrong pinned node key the doctor does
// not talk to the node's sshd at all, as sluice would not. Run it holding
// the rig lock:
//
//	flock /tmp/sluice-rig.lock go test -tags rig -run TestRigDoctor ./cmd/sluice-vk/
func TestRigDoctor(t *testing.T) {
	r := testrig.Load(t)
	healthy := runDoctor(t, rigDoctorConfig(t, r, ""), 0)
	for _, c := range healthy.Checks {
		if c.Status != doctor.OK {
			t.Errorf("healthy rig: %s %s: %s (fix: %s)", c.Status, c.Name, c.Found, c.Fix)
		}
	}
	// The rig's account has a POSIX login shell, which ran the test line
	// through the real login sshd.
	if c, ok := healthy.Find("login-shell"); !ok || !strings.Contains(c.Found, "runs sluice's POSIX sh command lines") {
		t.Errorf("healthy rig: login-shell %+v; want it found and OK", c)
	}
	// The versions and the options sluice learned from the site.
	for _, line := range []string{"openssh", "sbatch-options", "login-forwarding", "node-forwarding"} {
		c, _ := healthy.Find(line)
		t.Logf("%s %s: %s", c.Status, line, c.Found)
	}
	if c, _ := healthy.Find("openssh"); !strings.Contains(c.Found, "login sshd SSH-2.0-OpenSSH_") {
		t.Errorf("healthy rig: openssh %+v; want the login sshd's banner", c)
	}
	if c, _ := healthy.Find("sbatch-options"); !strings.Contains(c.Found, "learned from the site: sbatch 22.05") {
		t.Errorf("healthy rig: sbatch-options %+v; want learned from 22.05", c)
	}
	if c, _ := healthy.Find("relay"); !strings.Contains(c.Found, ": sluice-vk places ") {
		t.Errorf("healthy rig: relay %+v; want the relay given placed", c)
	}
	if len(healthy.Checks) < 20 || t.Failed() {
		// Each case below compares its lines with these.
		t.Fatalf("healthy rig: %d checks, not all OK", len(healthy.Checks))
	}

	for _, tc := range []struct {
		name     string
		override string                    // node sshd options
		login    string                    // login sshd options
		config   func(t *testing.T) string // extra SSH keys, or a DataRoot line
		check    string
		fix      string
		alsoFail []string // lines that fail with it
		skipped  []string // lines that need the check's success
	}{
		{name: "node forwarding disabled", override: "DisableForwarding yes\n",
			check: "node-forwarding", fix: "Network.SSH.Reverse.Sshd: userspace",
			alsoFail: []string{"stream-local", "gateway-ports"}},
		{name: "login TCP forwarding refused", login: "AllowTcpForwarding no\n",
			check: "login-forwarding", fix: "Network.SSH.Reverse.NodeExec: srun with Reverse.Sshd: userspace",
			alsoFail: []string{"node-sshd"}, skipped: []string{"stream-local", "gateway-ports", "node-forwarding"}},
		{name: "stream-local refused", override: "AllowStreamLocalForwarding no\n",
			check: "stream-local", fix: "Network.SSH.Reverse.Sshd: userspace", alsoFail: []string{"node-forwarding"}},
		{name: "GatewayPorts on", override: "GatewayPorts yes\n",
			check: "gateway-ports", fix: "GatewayPorts no"},
		{name: "wrong node key", config: func(t *testing.T) string {
			file := filepath.Join(t.TempDir(), "node_known_hosts")
			line := knownhosts.Line([]string{r.Get(t, "RIG_NODE_NAME"), r.Get(t, "RIG_NODE_ADDR")}, sshxtest.NewSigner(t).PublicKey())
			if err := os.WriteFile(file, []byte(line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return "NodeKnownHostsFile: " + file
		}, check: "node-sshd", fix: "pin the compute nodes' current host keys",
			skipped: []string{"stream-local", "gateway-ports", "node-forwarding"}},
		{name: "data root not writable", config: func(*testing.T) string {
			return "DataRoot: /etc/sluice-doctor" // alice cannot make it
		}, check: "data-root", fix: "Site.DataRoot"},
		{name: "expired certificate", config: func(t *testing.T) string {
			key, err := sshx.Signer(r.Get(t, "RIG_KEY"))
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "alice-cert.pub")
			now := time.Now()
			sshxtest.WriteCertificate(t, file, sshxtest.Certificate(t, sshxtest.NewSigner(t), key.PublicKey(), ssh.UserCert,
				[]string{r.Get(t, "RIG_USER")}, now.Add(-48*time.Hour), now.Add(-time.Hour)))
			return "CertificateFile: " + file
		}, check: "certificate", fix: "renew the certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			extra := ""
			if tc.config != nil {
				extra = tc.config(t)
			}
			if tc.override != "" {
				r.OverrideNodeSSHD(t, tc.override) // restored when this case ends
			}
			if tc.login != "" {
				r.OverrideLoginSSHD(t, tc.login) // restored when this case ends
			}
			got := runDoctor(t, rigDoctorConfig(t, r, extra), 1)
			for _, want := range healthy.Checks {
				c, ok := got.Find(want.Name)
				switch {
				case !ok:
					t.Errorf("no %s line", want.Name)
				case want.Name == tc.check:
					if c.Status != doctor.Fail || !strings.Contains(c.Fix, tc.fix) {
						t.Errorf("%s: %s %q (fix %q); want FAIL with a fix naming %q", c.Name, c.Status, c.Found, c.Fix, tc.fix)
					}
					t.Logf("%s %s: %s — fix: %s", c.Status, c.Name, c.Found, c.Fix)
				case slices.Contains(tc.alsoFail, c.Name):
					if c.Status != doctor.Fail {
						t.Errorf("%s: %s %q; want FAIL with %s", c.Name, c.Status, c.Found, tc.check)
					}
				case slices.Contains(tc.skipped, c.Name):
					if c.Status != doctor.Skip {
						t.Errorf("%s: %s %q; want SKIP, for want of a trusted connection", c.Name, c.Status, c.Found)
					}
				case c.Status != want.Status:
					t.Errorf("%s changed: %s %q (fix %q); healthy %s", c.Name, c.Status, c.Found, c.Fix, want.Status)
				}
			}
		})
	}
}

// rigDoctorConfig writes the rig's configuration with reverse tunnels and
// SOCKS on, so that the node's sshd must allow what they need; extra is a
// key of Network.SSH (or a DataRoot line, which replaces the rig's).
func rigDoctorConfig(t *testing.T, r *testrig.Rig, extra string) string {
	t.Helper()
	dataRoot, sshExtra := "DataRoot: "+r.Get(t, "RIG_DATA_ROOT"), ""
	switch {
	case strings.HasPrefix(extra, "DataRoot:"):
		dataRoot = extra
	case extra != "":
		sshExtra = "    " + extra + "\n"
	}
	nodeKeys := "    NodeKnownHostsFile: " + r.Get(t, "RIG_NODE_KNOWN_HOSTS") + "\n"
	if strings.HasPrefix(extra, "NodeKnownHostsFile:") {
		nodeKeys = ""
	}
	text := fmt.Sprintf(`NodeName: doctor-rig
Site:
  Access: ssh
  %s
  SocketDirRoot: %s
  ContainerRuntime: charliecloud
Network:
  EnableTunnel: true
  SSH:
    LoginHost: %s
    Port: %s
    User: %s
    KeyFile: %s
    KnownHostsFile: %s
%s%s    Reverse:
      Enabled: true
      AllowSocks: true
`, dataRoot, r.Get(t, "RIG_SOCKET_DIR_ROOT"), r.Get(t, "RIG_LOGIN_ADDR"), r.Get(t, "RIG_LOGIN_PORT"),
		r.Get(t, "RIG_USER"), r.Get(t, "RIG_KEY"), r.Get(t, "RIG_KNOWN_HOSTS"), nodeKeys, sshExtra)
	file := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// runDoctor runs `sluice-vk doctor --json` with the configuration file and
// checks its exit status.
func runDoctor(t *testing.T, file string, wantCode int) *doctor.Report {
	t.Helper()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	// the relay sluice-vk would be given: the doctor reads which machine
	// it is built for, and this test binary is built for the rig's
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	code := doctorCommand([]string{"--config", file, "--json", "--queue-wait", "1m", "--relay-binary", exe}, &stdout, &stderr)
	t.Logf("doctor: exit %d in %v", code, time.Since(start).Round(100*time.Millisecond))
	var rep doctor.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("doctor: exit %d, output %q, stderr %q: %v", code, stdout.String(), stderr.String(), err)
	}
	if code != wantCode {
		t.Errorf("doctor: exit %d; want %d\n%s", code, wantCode, stdout.String())
	}
	return &rep
}

// TestRigDoctorKerberosAndBastion: with Auth kerberos (the rig's KDC and
// alice's keytab) the doctor gets a ticket (the kerberos line) and logs in
// with gssapi-with-mic, the node hop too; with a bastion, it goes through
// it (the bastion line) as sluice-vk does. Every line is OK in both.
//
//	flock /tmp/sluice-rig.lock go test -tags rig -run TestRigDoctorKerberosAndBastion ./cmd/sluice-vk/
func TestRigDoctorKerberosAndBastion(t *testing.T) {
	r := testrig.Load(t)
	for _, need := range []string{"RIG_KRB5_REALM", "RIG_BASTION_ADDR"} {
		if _, ok := r.Lookup(need); !ok {
			testrig.Unavailable(t, "the rig has no "+need+" (hack/rig/rig.sh up)")
		}
	}
	for _, tc := range []struct {
		name, extra, line string
	}{
		{"kerberos", fmt.Sprintf("Auth: kerberos\n    Principal: %s\n    KeytabFile: %s\n    KeytabSecret: sluice-keytab\n    Realm: %s\n    KDCs: [%q]",
			r.Get(t, "RIG_KRB5_PRINCIPAL"), r.Get(t, "RIG_KRB5_KEYTAB"), r.Get(t, "RIG_KRB5_REALM"), r.Get(t, "RIG_KRB5_KDC")), "kerberos"},
		{"bastion", fmt.Sprintf("Bastion:\n      Host: %s\n      Port: %s\n      KnownHostsFile: %s\n      HostKeys: sluice-bastion-hosts",
			r.Get(t, "RIG_BASTION_ADDR"), r.Get(t, "RIG_BASTION_PORT"), r.Get(t, "RIG_BASTION_KNOWN_HOSTS")), "bastion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := runDoctor(t, rigDoctorConfig(t, r, tc.extra), 0)
			for _, c := range rep.Checks {
				if c.Status != doctor.OK {
					t.Errorf("%s %s: %s (fix: %s)", c.Status, c.Name, c.Found, c.Fix)
				}
			}
			c, ok := rep.Find(tc.line)
			if !ok {
				t.Fatalf("no %s line in %+v", tc.line, rep.Checks)
			}
			auth, _ := rep.Find("auth")
			t.Logf("%s: %s; auth: %s", c.Name, c.Found, auth.Found)
		})
	}
}

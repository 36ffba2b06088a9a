//go:build rig

package testrig

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sluice-hpc/sluice/internal/sshx"
)

// The second site works as a site: alice logs in to its login node over SSH
// with its pinned host key and finds OpenSSH 10.0 there and on the compute
// node behind it, and Slurm 24.11, which runs her job on the node, shows it
// in squeue while it runs, and accounts it COMPLETED in sacct.
func TestRigSite2RunsAJob(t *testing.T) {
	s := Load(t).Site2(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	login := dialSite(ctx, t, s, nil, net.JoinHostPort(s.Get(t, "RIG_LOGIN_ADDR"), s.Get(t, "RIG_LOGIN_PORT")), "RIG_KNOWN_HOSTS")
	node := dialSite(ctx, t, s, login.DialContext, net.JoinHostPort(s.Get(t, "RIG_NODE_ADDR"), "22"), "RIG_NODE_KNOWN_HOSTS")
	for name, c := range map[string]*ssh.Client{"login": login, "node": node} {
		if v := string(c.ServerVersion()); !strings.HasPrefix(v, "SSH-2.0-OpenSSH_10.0") {
			t.Errorf("%s node's sshd is %q; want OpenSSH 10.0", name, v)
		}
	}
	if got := run(ctx, t, node, "hostname -I"); !strings.Contains(got, s.Get(t, "RIG_NODE_ADDR")) {
		t.Errorf("the node's addresses are %q; want %s among them", got, s.Get(t, "RIG_NODE_ADDR"))
	}

	version := run(ctx, t, login, "sbatch --version")
	if !regexp.MustCompile(`^slurm(-wlm)? 24\.11\.\d+\n$`).MatchString(version) {
		t.Fatalf("sbatch --version = %q; want Slurm 24.11", version)
	}

	name := "testrig-site2-" + rand.Text()[:8]
	out := path.Join(s.Get(t, "RIG_DATA_ROOT"), name+".out")
	t.Cleanup(func() { os.Remove(s.HostPath(out)) })
	// the job sleeps so that squeue sees it before it ends
	id := strings.TrimSpace(run(ctx, t, login, fmt.Sprintf(
		`sbatch --parsable --job-name=%s --output=/dev/null --wrap='sleep 2; echo "$SLURM_JOB_ID on $SLURMD_NODENAME" >%s'`, name, out)))
	if !regexp.MustCompile(`^\d+$`).MatchString(id) {
		t.Fatalf("sbatch printed %q; want a job id", id)
	}
	queued := run(ctx, t, login, "squeue -h -o '%i|%j|%u' -j "+id)
	if want := id + "|" + name + "|" + s.Get(t, "RIG_USER") + "\n"; queued != want {
		t.Errorf("squeue = %q; want %q", queued, want)
	}

	want := id + "|COMPLETED|0:0\n"
	var acct string
	for acct != want {
		select {
		case <-ctx.Done():
			t.Fatalf("sacct = %q; want %q before the deadline", acct, want)
		case <-time.After(200 * time.Millisecond):
		}
		acct = run(ctx, t, login, "sacct -n -X -P -o JobID,State,ExitCode -j "+id)
	}
	if got, want := run(ctx, t, login, "cat "+out), id+" on "+s.Get(t, "RIG_NODE_NAME")+"\n"; got != want {
		t.Errorf("the job wrote %q; want %q", got, want)
	}
}

// An sshd override on the second site reaches its sshd, not the first
// site's: with DenyUsers alice there, alice is refused at the second site's
// login node and still let in at the first's.
func TestRigSite2OverrideLoginSSHD(t *testing.T) {
	r := Load(t)
	s := r.Site2(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s.OverrideLoginSSHD(t, "DenyUsers "+s.Get(t, "RIG_USER")+"\n")

	first := dialSite(ctx, t, r, nil, net.JoinHostPort(r.Get(t, "RIG_LOGIN_ADDR"), r.Get(t, "RIG_LOGIN_PORT")), "RIG_KNOWN_HOSTS")
	if got := run(ctx, t, first, "echo ok"); got != "ok\n" {
		t.Errorf("the first site's login node said %q; want ok", got)
	}
	addr := net.JoinHostPort(s.Get(t, "RIG_LOGIN_ADDR"), s.Get(t, "RIG_LOGIN_PORT"))
	c, err := sshx.Dial(ctx, (&net.Dialer{}).DialContext, addr, clientConfig(t, s, "RIG_KNOWN_HOSTS", addr))
	if err == nil {
		c.Close()
		t.Fatal("alice logged in to the second site's login node; want her refused by DenyUsers")
	}
	if !strings.Contains(err.Error(), "unable to authenticate") {
		t.Errorf("login: %v; want an authentication failure", err)
	}
}

// dialSite connects as the site's user with the rig's key, the host key
// pinned by the known_hosts file that knownHostsKey names; through a hop
// when dial is given.
func dialSite(ctx context.Context, t *testing.T, s *Rig, dial sshx.DialFunc, addr, knownHostsKey string) *ssh.Client {
	t.Helper()
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	c, err := sshx.Dial(ctx, dial, addr, clientConfig(t, s, knownHostsKey, addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func clientConfig(t *testing.T, s *Rig, knownHostsKey, addr string) *ssh.ClientConfig {
	t.Helper()
	pem, err := os.ReadFile(s.Get(t, "RIG_KEY"))
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	check, err := sshx.HostKeys(s.Get(t, knownHostsKey))
	if err != nil {
		t.Fatal(err)
	}
	return &ssh.ClientConfig{
		User:              s.Get(t, "RIG_USER"),
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback:   check,
		HostKeyAlgorithms: sshx.HostKeyAlgorithms(check, addr),
	}
}

// run runs cmd in a session of c and returns its output, failing the test
// if it fails.
func run(ctx context.Context, t *testing.T, c *ssh.Client, cmd string) string {
	t.Helper()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	defer sess.Close()
	stop := context.AfterFunc(ctx, func() { sess.Close() })
	defer stop()
	var stdout, stderr bytes.Buffer
	sess.Stdout, sess.Stderr = &stdout, &stderr
	if err := sess.Run(cmd); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, stderr.String())
	}
	return stdout.String()
}

package doctor

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/site"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"golang.org/x/crypto/ssh"
)

// Doctor checks a site. Config is required; the other fields have
// defaults.
type Doctor struct {
	Config *config.Config
	// Logger receives what sluice's own code logs on the way (reconnects,
	// certificate warnings). If nil, nothing is logged: the report says it.
	Logger *slog.Logger
	// QueueWait is how long the probe job may wait in the queue before its
	// checks are given up. If zero, 2m.
	QueueWait time.Duration
	// Timeout bounds each connection and handshake. If zero, 20s.
	Timeout time.Duration
	// Now tells the time. If nil, time.Now.
	Now func() time.Time
	// RelayBinary is sluice-vk's --relay-binary: the relay it places on
	// the site, which must fit the site's machine. If empty, the relay
	// for the site's machine in RelayDir.
	RelayBinary string
	// RelayDir holds the relays of each architecture (relaybin.File).
	// If empty, the running executable's directory, as sluice-vk's.
	RelayDir string
}

// Run runs every check and returns the report; it never fails as a whole:
// what cannot be checked is a line of the report.
func (d *Doctor) Run(ctx context.Context) *Report {
	r := &Report{}
	c := d.Config
	log := d.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var runner site.Runner
	var login *ssh.Client
	var a *access
	if c.Site.Access == config.AccessLocal {
		r.add(Check{Name: "login", Status: OK, Found: "Site.Access local: Slurm commands run on this host"})
		runner = &site.Local{}
	} else {
		if a = loginAccess(r, c.Network.SSH, d.now()); a != nil {
			a.dialer = d.dialer(r, log)
			login = a.dial(ctx, r, c.Network.SSH, d.timeout())
		}
		if login == nil {
			d.skipRest(r, "not checked: no SSH connection to the login node")
			return r
		}
		defer login.Close()
		s, err := site.NewSSH(site.SSHConfig{
			Addr: a.addr, User: a.user, Auth: a.loginAuth(), HostKeyCallback: a.loginKeys, Dial: a.dialer,
			DialTimeout: d.timeout(), MaxStdout: 1 << 20, Logger: log,
		})
		if err != nil {
			d.skipRest(r, "not checked: "+err.Error())
			return r
		}
		defer s.Close()
		runner = s
	}
	r.add(loginShellCheck(ctx, runner))
	r.add(slurmCheck(ctx, runner, c))
	dataRoot := dataRootCheck(ctx, runner, c.Site.DataRoot, c.Network.SSH.User)
	r.add(dataRoot)
	r.add(spaceCheck(ctx, runner, c.Site.DataRoot))
	r.add(sha256Check(ctx, runner, c))
	r.add(d.relayCheck(ctx, runner))
	r.add(sbatchOptionsCheck(ctx, runner, c.Site.DataRoot, log))
	r.add(opensshCheck(ctx, runner, login))
	if login != nil {
		r.add(loginForwardingCheck(login, a.addr, c))
	} else {
		r.add(Check{Name: "login-forwarding", Status: Skip, Found: "not checked: Site.Access local has no SSH connection to the login node"})
	}
	p := &prober{d: d, r: r, runner: runner, log: log, access: a, login: login}
	p.run(ctx, dataRoot.Status == OK)
	return r
}

// dialer is how sluice-vk reaches the login node (site.Dialer: through the
// bastion when there is one, paced); with a bastion, a line says so. nil
// (a plain connection) when it cannot be made, which the bastion line says.
func (d *Doctor) dialer(r *Report, log *slog.Logger) sshx.DialFunc {
	b := d.Config.Network.SSH.Bastion
	dial, err := site.Dialer(d.Config, log)
	if err != nil {
		r.add(Check{Name: "bastion", Status: Fail, Found: err.Error(),
			Fix: "check Network.SSH.Bastion (Host, Port, User, KnownHostsFile, KeyFile)"})
		return nil
	}
	if b.Host != "" {
		if b.User == "" {
			b.User = d.Config.Network.SSH.User
		}
		r.add(Check{Name: "bastion", Status: OK, Found: fmt.Sprintf("connections go through %s@%s:%d, its host key checked against %s (the login line says whether it answered)",
			b.User, b.Host, b.Port, b.KnownHostsFile)})
	}
	return dial
}

// probeChecks are the lines the probe job gives, in order.
var probeChecks = []string{"probe-job", "runtime", "socket-dir", "unprivileged-ports", "node-sshd", "stream-local", "gateway-ports", "node-forwarding"}

// skipRest adds every check after the login's as skipped.
func (d *Doctor) skipRest(r *Report, why string) {
	for _, name := range append([]string{"login-shell", "slurm", "data-root", "data-root-space", "sha256sum", "relay", "sbatch-options", "openssh", "login-forwarding"}, probeChecks...) {
		r.add(Check{Name: name, Status: Skip, Found: why})
	}
}

func (d *Doctor) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func (d *Doctor) timeout() time.Duration {
	if d.Timeout > 0 {
		return d.Timeout
	}
	return 20 * time.Second
}

func (d *Doctor) queueWait() time.Duration {
	if d.QueueWait > 0 {
		return d.QueueWait
	}
	return 2 * time.Minute
}

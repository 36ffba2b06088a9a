package site

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"golang.org/x/crypto/ssh"
	"golang.org/x/time/rate"
)

// Dialer returns what the virtual kubelet opens its connections to the
// login node with: TCP, through Network.SSH.Bastion when one is set (its
// host key checked against its own known_hosts), every connection taking a
// token of a bucket of Network.SSH.Pacing's rate and burst first.
//
// Every call with the same c returns the same dialer, made at the first
// call: all of the virtual kubelet's SSH connections to the site (the
// runner's, the kubelet API streams') share its bucket.
func Dialer(c *config.Config, log *slog.Logger) (sshx.DialFunc, error) {
	dialersMu.Lock()
	defer dialersMu.Unlock()
	if d, ok := dialers[c]; ok {
		return d, nil
	}
	d, err := newDialer(c, log)
	if err != nil {
		return nil, err
	}
	dialers[c] = d
	return d, nil
}

var (
	dialersMu sync.Mutex
	dialers   = map[*config.Config]sshx.DialFunc{}
)

func newDialer(c *config.Config, log *slog.Logger) (sshx.DialFunc, error) {
	if log == nil {
		log = slog.Default()
	}
	h := c.Network.SSH
	p := h.Pacing // defaults filled here too, for a Config made by hand
	if p.Rate <= 0 {
		p.Rate = config.DefaultPacingRate
	}
	if p.Burst <= 0 {
		p.Burst = config.DefaultPacingBurst
	}
	lim := rate.NewLimiter(rate.Limit(p.Rate), p.Burst)
	tcp := (&net.Dialer{}).DialContext
	b := h.Bastion
	if b.Host == "" {
		return sshx.Paced(tcp, lim), nil
	}
	port := b.Port
	if port == 0 {
		port = 22
	}
	keyFile := b.KeyFile
	if keyFile == "" {
		keyFile = h.KeyFile
	}
	signer, err := sshx.Signer(keyFile)
	if err != nil {
		return nil, fmt.Errorf("bastion: Network.SSH.Bastion.KeyFile: %w", err)
	}
	keys, err := sshx.HostKeys(b.KnownHostsFile)
	if err != nil {
		return nil, fmt.Errorf("bastion: Network.SSH.Bastion.KnownHostsFile: %w", err)
	}
	user := b.User
	if user == "" {
		user = h.User
	}
	addr := net.JoinHostPort(b.Host, strconv.Itoa(port))
	log.Info("the login node is reached through a bastion", "bastion", addr, "bastion_user", user)
	return (&sshx.Bastion{
		Addr: addr,
		Config: &ssh.ClientConfig{
			User:              user,
			Auth:              []ssh.AuthMethod{ssh.PublicKeys(signer)},
			HostKeyCallback:   keys,
			HostKeyAlgorithms: sshx.HostKeyAlgorithms(keys, addr),
		},
		Dial: sshx.Paced(tcp, lim),
	}).DialContext, nil
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	"golang.org/x/crypto/ssh"
)

// accessFlags are the flags of the way to the login node beyond the login
// node itself: a bastion before it, and how reconnections are spread out.
type accessFlags struct {
	bastion           string // host:port; "" for none
	bastionUser       string // "" for --user
	bastionKey        string // "" for --key
	bastionKnownHosts string

	spread     time.Duration // per tunnel; 0: no jitter
	windowMax  time.Duration
	tunnelFile string // holds the number of tunnels; "" for none
}

// defaultWindowMax is the widest window reconnections are spread over.
const defaultWindowMax = 30 * time.Second

// maxTunnels bounds the number read from --tunnels-file.
const maxTunnels = 100000

func (a *accessFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&a.bastion, "bastion", "", "a bastion before the login node, HOST:PORT (PORT defaults to 22) (default: none)")
	fs.StringVar(&a.bastionUser, "bastion-user", "", "the account on the bastion (default: --user)")
	fs.StringVar(&a.bastionKey, "bastion-key", "", "the private key for the bastion, unencrypted (default: --key)")
	fs.StringVar(&a.bastionKnownHosts, "bastion-known-hosts", "", "known_hosts file pinning the bastion's host key (required with --bastion)")
	fs.DurationVar(&a.spread, "reconnect-spread", 0, "spread reconnections to the login node over this much per tunnel (--tunnels-file), a random wait before each; 0 for none")
	fs.DurationVar(&a.windowMax, "reconnect-window-max", defaultWindowMax, "the widest window reconnections are spread over")
	fs.StringVar(&a.tunnelFile, "tunnels-file", "", "file holding the number of tunnels on the site, read again before each reconnection (default: the window is --reconnect-window-max)")
}

// check checks the access flags, naming the flag at fault.
func (a *accessFlags) check() []error {
	var errs []error
	if a.bastion != "" {
		addr, err := parseHostPort(a.bastion, 22)
		if err != nil {
			errs = append(errs, fmt.Errorf("--bastion: %w", err))
		}
		a.bastion = addr
		if a.bastionKnownHosts == "" {
			errs = append(errs, errors.New("--bastion-known-hosts is required with --bastion"))
		}
		if a.bastionUser != "" {
			if err := checkUser(a.bastionUser); err != nil {
				errs = append(errs, fmt.Errorf("--bastion-user: %w", err))
			}
		}
	} else if a.bastionUser != "" || a.bastionKey != "" || a.bastionKnownHosts != "" {
		errs = append(errs, errors.New("--bastion-user, --bastion-key and --bastion-known-hosts need --bastion"))
	}
	if a.spread < 0 {
		errs = append(errs, fmt.Errorf("--reconnect-spread: %v is negative", a.spread))
	}
	if a.windowMax <= 0 {
		errs = append(errs, fmt.Errorf("--reconnect-window-max: %v: want a positive duration", a.windowMax))
	}
	if a.tunnelFile != "" && a.spread == 0 {
		errs = append(errs, errors.New("--tunnels-file needs --reconnect-spread"))
	}
	return errs
}

// load reads the bastion's files and sets hop's dialer and reconnection
// jitter; auth is how the login node is logged into, used on the bastion
// too unless --bastion-key names another key.
func (a *accessFlags) load(hop *tunnel.Hop, user string, auth ssh.AuthMethod, log *slog.Logger) []error {
	if a.spread > 0 {
		j := &sshx.Jitter{Window: a.window(log)}
		hop.BeforeLogin = j.Wait
	}
	if a.bastion == "" {
		return nil
	}
	var errs []error
	if a.bastionKey != "" {
		signer, err := sshx.PodSigner(a.bastionKey)
		if err != nil {
			errs = append(errs, fmt.Errorf("--bastion-key: %w", err))
		} else {
			auth = ssh.PublicKeys(signer)
		}
	}
	keys, err := sshx.HostKeys(a.bastionKnownHosts)
	if err != nil {
		errs = append(errs, fmt.Errorf("--bastion-known-hosts: %w", err))
	}
	if len(errs) > 0 {
		return errs
	}
	if a.bastionUser != "" {
		user = a.bastionUser
	}
	hop.Dial = (&sshx.Bastion{
		Addr: a.bastion,
		Config: &ssh.ClientConfig{
			User:              user,
			Auth:              []ssh.AuthMethod{auth},
			HostKeyCallback:   keys,
			HostKeyAlgorithms: sshx.HostKeyAlgorithms(keys, a.bastion),
		},
	}).DialContext
	return nil
}

// window returns the reconnection window: --reconnect-spread for each of
// the tunnels --tunnels-file counts, at most --reconnect-window-max; the
// maximum when the file is not given or cannot be read.
func (a *accessFlags) window(log *slog.Logger) func() time.Duration {
	return func() time.Duration {
		if a.tunnelFile == "" {
			return a.windowMax
		}
		n, err := readTunnels(a.tunnelFile)
		if err != nil {
			log.Warn("reconnect window: number of tunnels unknown: using the widest window", "window", a.windowMax, "error", err)
			return a.windowMax
		}
		return sshx.SpreadWindow(n, a.spread, a.windowMax)
	}
}

// readTunnels reads the number of tunnels from file: a decimal number,
// 0 to maxTunnels; an empty file counts as 0.
func readTunnels(file string) (int, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("read tunnels: %w", err)
	}
	return parseTunnels(string(data))
}

func parseTunnels(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > maxTunnels {
		return 0, fmt.Errorf("tunnels: %q: want a number from 0 to %d", s, maxTunnels)
	}
	return n, nil
}

package sshx

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/internal/krb"
	"golang.org/x/crypto/ssh"
)

// Tickets gives the Kerberos tickets gssapi-with-mic needs (krb.Source).
type Tickets interface {
	ServiceTicket(service, host string) (krb.Credential, error)
	ForwardedTGT() (krb.Credential, error)
}

var _ Tickets = (*krb.Source)(nil)

// GSSAPIClient is an ssh.GSSAPIClient for the Kerberos V5 mechanism, with
// tickets from Tickets. x/crypto/ssh never asks for delegation; Delegate
// does: the forwarded TGT goes to the server in the authenticator.
//
// One GSSAPIClient may serve many connections (an ssh.ClientConfig is
// shared), but the GSS-API calls of one authentication keep state: an
// authentication holds the client from its first InitSecContext to its
// DeleteSecContext (which x/crypto/ssh always calls), so concurrent ones
// take turns.
type GSSAPIClient struct {
	Tickets  Tickets
	Delegate bool
	// Now is the clock. If nil, time.Now.
	Now func() time.Time

	mu  sync.Mutex
	ctx *krb.InitiatorContext
}

var _ ssh.GSSAPIClient = (*GSSAPIClient)(nil)

// KerberosAuth returns the gssapi-with-mic method for host (the name the
// server's host principal carries: host/<host>), delegating the TGT when
// delegate is set.
func KerberosAuth(t Tickets, host string, delegate bool) ssh.AuthMethod {
	return ssh.GSSAPIWithMICAuthMethod(&GSSAPIClient{Tickets: t, Delegate: delegate}, host)
}

// InitSecContext starts the context with target ("host@<name>", as
// x/crypto/ssh passes it) when token is nil, and reads the server's reply
// token otherwise.
func (g *GSSAPIClient) InitSecContext(target string, token []byte, _ bool) ([]byte, bool, error) {
	if token == nil {
		g.mu.Lock()
		g.ctx = nil
		return g.start(target)
	}
	if g.ctx == nil {
		return nil, false, errors.New("gssapi: a reply token before the first one")
	}
	if err := g.ctx.Accept(token); err != nil {
		return nil, false, fmt.Errorf("gssapi: %w", err)
	}
	return nil, false, nil
}

func (g *GSSAPIClient) start(target string) ([]byte, bool, error) {
	service, host, ok := strings.Cut(target, "@")
	if !ok || service == "" || host == "" {
		return nil, false, fmt.Errorf("gssapi: target %q: want service@host", target)
	}
	svc, err := g.Tickets.ServiceTicket(service, host)
	if err != nil {
		return nil, false, fmt.Errorf("gssapi: %w", err)
	}
	var fwd *krb.Credential
	if g.Delegate {
		c, err := g.Tickets.ForwardedTGT()
		if err != nil {
			return nil, false, fmt.Errorf("gssapi: %w", err)
		}
		fwd = &c
	}
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	ctx, tok, err := krb.Start(svc, 0, fwd, now())
	if err != nil {
		return nil, false, fmt.Errorf("gssapi: %w", err)
	}
	g.ctx = ctx
	return tok, true, nil
}

// GetMIC signs the SSH session's MIC field with the context's key.
func (g *GSSAPIClient) GetMIC(micField []byte) ([]byte, error) {
	if g.ctx == nil {
		return nil, errors.New("gssapi: MIC without a context")
	}
	return g.ctx.MIC(micField)
}

// DeleteSecContext ends the authentication and lets the next one start.
func (g *GSSAPIClient) DeleteSecContext() error {
	g.ctx = nil
	g.mu.Unlock()
	return nil
}

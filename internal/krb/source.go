// Package krb gets Kerberos tickets from a keytab and builds the Kerberos
// V5 GSS-API tokens (RFC 4121) an SSH client needs for gssapi-with-mic
// (RFC 4462), including the delegation of a forwarded TGT, in pure Go on
// top of github.com/jcmturner/gokrb5.
package krb

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/types"
)

// Source gets tickets for one principal from its keytab. A TGT is got on
// first use and got again from the keytab (read again then, so a renewed
// Secret is used) before it expires; service tickets are kept until they
// near their end. A Source is safe for concurrent use.
type Source struct {
	// KeytabFile holds the principal's keys.
	KeytabFile string
	// Principal is user or user@REALM; without a realm, the configuration's
	// default realm.
	Principal string
	// Config is the Kerberos configuration (LoadConfig, NewConfig).
	Config *config.Config
	// RenewBefore is how long before a ticket ends a new one is got. If
	// zero, a sixth of the ticket's lifetime, at least one minute.
	RenewBefore time.Duration
	// Now is the clock. If nil, time.Now.
	Now func() time.Time

	mu  sync.Mutex
	cl  *client.Client
	tgt *Credential
	svc map[string]*Credential
}

func (s *Source) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Realm returns the principal's realm.
func (s *Source) Realm() string {
	_, realm := s.split()
	return realm
}

func (s *Source) split() (user, realm string) {
	user, realm, ok := strings.Cut(s.Principal, "@")
	if !ok || realm == "" {
		if s.Config != nil {
			realm = s.Config.LibDefaults.DefaultRealm
		}
	}
	return user, realm
}

// fresh tells whether c is still good for a while.
func (s *Source) fresh(c *Credential) bool {
	if c == nil {
		return false
	}
	margin := s.RenewBefore
	if margin == 0 {
		start := c.Part.StartTime
		if start.IsZero() {
			start = c.Part.AuthTime
		}
		margin = max(c.Part.EndTime.Sub(start)/6, time.Minute)
	}
	return s.now().Add(margin).Before(c.Part.EndTime)
}

// TGT returns a valid TGT, getting a new one from the keytab when the one
// held is near its end.
func (s *Source) TGT() (Credential, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.tgtLocked()
	if err != nil {
		return Credential{}, err
	}
	return *t, nil
}

func (s *Source) tgtLocked() (*Credential, error) {
	if s.fresh(s.tgt) {
		return s.tgt, nil
	}
	if s.Config == nil {
		return nil, errors.New("krb: no Kerberos configuration")
	}
	user, realm := s.split()
	if user == "" || realm == "" {
		return nil, fmt.Errorf("krb: principal %q: want user@REALM or a default realm", s.Principal)
	}
	kt, err := keytab.Load(s.KeytabFile)
	if err != nil {
		return nil, fmt.Errorf("krb: keytab: %w", err)
	}
	cl := client.NewWithKeytab(user, realm, kt, s.Config, client.DisablePAFXFAST(true))
	tgt, err := asExchange(cl, realm)
	if err != nil {
		return nil, classify(fmt.Sprintf("get a ticket for %s@%s", user, realm), err)
	}
	s.cl, s.tgt, s.svc = cl, tgt, nil
	return tgt, nil
}

// ServiceTicket returns a ticket for the service service/host (host for
// SSH) in the principal's realm.
func (s *Source) ServiceTicket(service, host string) (Credential, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tgt, err := s.tgtLocked()
	if err != nil {
		return Credential{}, err
	}
	spn := service + "/" + host
	if c := s.svc[spn]; s.fresh(c) {
		return *c, nil
	}
	realm := s.tgt.CRealm
	name := types.PrincipalName{NameType: nametype.KRB_NT_SRV_HST, NameString: []string{service, host}}
	_, rep, err := s.cl.TGSREQGenerateAndExchange(name, realm, tgt.Ticket, tgt.Part.Key, false)
	if err != nil {
		return Credential{}, classify("get a ticket for "+spn, err)
	}
	c := &Credential{Ticket: rep.Ticket, Part: rep.DecryptedEncPart, CRealm: tgt.CRealm, CName: tgt.CName}
	if s.svc == nil {
		s.svc = make(map[string]*Credential)
	}
	s.svc[spn] = c
	return *c, nil
}

// ForwardedTGT returns a new TGT marked forwarded, with no addresses, for
// delegation to a server.
func (s *Source) ForwardedTGT() (Credential, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tgt, err := s.tgtLocked()
	if err != nil {
		return Credential{}, err
	}
	c, err := forwardTGT(s.cl, *tgt)
	if err != nil {
		return Credential{}, classify("forward the TGT", err)
	}
	return c, nil
}

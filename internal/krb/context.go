package krb

import (
	"errors"
	"fmt"
	"time"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// InitiatorContext is one GSS-API security context of the Kerberos V5
// mechanism, from the initiator's side, with mutual authentication: Start
// gives the AP-REQ token, Accept reads the acceptor's AP-REP token, and MIC
// signs messages with the context's key.
type InitiatorContext struct {
	svc      Credential
	auth     types.Authenticator
	key      types.EncryptionKey // the key MIC uses
	acceptor bool                // key is the acceptor's subkey
	done     bool
}

// Start builds the initial context token for the service ticket svc: a
// framed AP-REQ with mutual authentication required, whose authenticator
// checksum carries flags (FlagMutual and FlagInteg are always set) and, if
// delegate is not nil, that forwarded TGT as a KRB-CRED sealed with the
// ticket's session key, and the delegation flag.
func Start(svc Credential, flagBits uint32, delegate *Credential, now time.Time) (*InitiatorContext, []byte, error) {
	var cred []byte
	if delegate != nil {
		var err error
		if cred, err = MarshalKRBCred(*delegate, svc.Part.Key, now); err != nil {
			return nil, nil, err
		}
	}
	sum, err := Checksum(flagBits|FlagMutual|FlagInteg, cred)
	if err != nil {
		return nil, nil, err
	}
	auth, err := types.NewAuthenticator(svc.CRealm, svc.CName)
	if err != nil {
		return nil, nil, fmt.Errorf("krb: authenticator: %w", err)
	}
	auth.Cksum = types.Checksum{CksumType: ChecksumType, Checksum: sum}
	req, err := messages.NewAPReq(svc.Ticket, svc.Part.Key, auth)
	if err != nil {
		return nil, nil, fmt.Errorf("krb: AP-REQ: %w", err)
	}
	types.SetFlag(&req.APOptions, flags.APOptionMutualRequired)
	b, err := req.Marshal()
	if err != nil {
		return nil, nil, fmt.Errorf("krb: AP-REQ: %w", err)
	}
	return &InitiatorContext{svc: svc, auth: auth, key: svc.Part.Key}, frame(tokAPReq, b), nil
}

// Accept reads the acceptor's reply token: an AP-REP answering this
// context's authenticator (its subkey, if any, becomes the context key), or
// a KRB-ERROR, returned as an error that says why.
func (c *InitiatorContext) Accept(token []byte) error {
	id, inner, err := unframe(token)
	if err != nil {
		return err
	}
	switch id {
	case tokKRBError:
		var e messages.KRBError
		if err := e.Unmarshal(inner); err != nil {
			return fmt.Errorf("krb: acceptor error (unreadable): %w", err)
		}
		return classify("authenticate to the server", e)
	case tokAPRep:
	default:
		return fmt.Errorf("krb: token ID %x, want an AP-REP", id)
	}
	var rep messages.APRep
	if err := rep.Unmarshal(inner); err != nil {
		return fmt.Errorf("krb: AP-REP: %w", err)
	}
	plain, err := crypto.DecryptEncPart(rep.EncPart, c.svc.Part.Key, keyusage.AP_REP_ENCPART)
	if err != nil {
		return fmt.Errorf("krb: AP-REP: %w", err)
	}
	var part messages.EncAPRepPart
	if err := part.Unmarshal(plain); err != nil {
		return fmt.Errorf("krb: AP-REP: %w", err)
	}
	if !part.CTime.Equal(c.auth.CTime.Truncate(time.Second)) || part.Cusec != c.auth.Cusec {
		return errors.New("krb: AP-REP does not answer this context's authenticator")
	}
	if len(part.Subkey.KeyValue) > 0 {
		c.key, c.acceptor = part.Subkey, true
	}
	c.done = true
	return nil
}

// MIC returns the RFC 4121 §4.2.6.1 MIC token of msg, with the
// initiator's sequence number.
func (c *InitiatorContext) MIC(msg []byte) ([]byte, error) {
	if !c.done {
		return nil, errors.New("krb: MIC before the context is established")
	}
	t := gssapi.MICToken{SndSeqNum: uint64(c.auth.SeqNumber), Payload: msg}
	if c.acceptor {
		t.Flags = gssapi.MICTokenFlagAcceptorSubkey
	}
	if err := t.SetChecksum(c.key, keyusage.GSSAPI_INITIATOR_SIGN); err != nil {
		return nil, fmt.Errorf("krb: MIC: %w", err)
	}
	b, err := t.Marshal()
	if err != nil {
		return nil, fmt.Errorf("krb: MIC: %w", err)
	}
	return b, nil
}

package krb

import (
	"bytes"
	"testing"
	"time"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/asnAppTag"
	"github.com/jcmturner/gokrb5/v8/iana/errorcode"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/msgtype"
	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// serviceTicket is a ticket for host/login whose session key the test
// knows (the acceptor's side of the test reads the authenticator with it).
func serviceTicket(t *testing.T) Credential {
	t.Helper()
	c := testCredential(t)
	c.Ticket.SName = types.PrincipalName{NameType: nametype.KRB_NT_SRV_HST, NameString: []string{"host", "login"}}
	return c
}

// acceptAPReq reads an initial context token as an acceptor would.
func acceptAPReq(t *testing.T, svc Credential, token []byte) (messages.APReq, uint32, []byte) {
	t.Helper()
	id, inner, err := unframe(token)
	if err != nil || id != tokAPReq {
		t.Fatalf("token: id %x, %v; want an AP-REQ", id, err)
	}
	var req messages.APReq
	if err := req.Unmarshal(inner); err != nil {
		t.Fatalf("AP-REQ: %v", err)
	}
	if !types.IsFlagSet(&req.APOptions, flags.APOptionMutualRequired) {
		t.Fatal("AP-REQ: mutual-required not set")
	}
	if err := req.DecryptAuthenticator(svc.Part.Key); err != nil {
		t.Fatalf("authenticator: %v", err)
	}
	if req.Authenticator.Cksum.CksumType != ChecksumType {
		t.Fatalf("checksum type: got %#x; want %#x", req.Authenticator.Cksum.CksumType, ChecksumType)
	}
	fl, cred, err := ParseChecksum(req.Authenticator.Cksum.Checksum)
	if err != nil {
		t.Fatalf("checksum: %v", err)
	}
	return req, fl, cred
}

// apRep answers auth, with subkey if it is not nil.
func apRep(t *testing.T, svc Credential, auth types.Authenticator, subkey *types.EncryptionKey) []byte {
	t.Helper()
	part := messages.EncAPRepPart{CTime: auth.CTime, Cusec: auth.Cusec, SequenceNumber: 7}
	if subkey != nil {
		part.Subkey = *subkey
	}
	pb, err := asn1.Marshal(part)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := crypto.GetEncryptedData(asn1tools.AddASNAppTag(pb, asnAppTag.EncAPRepPart), svc.Part.Key, keyusage.AP_REP_ENCPART, 0)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := asn1.Marshal(messages.APRep{PVNO: 5, MsgType: msgtype.KRB_AP_REP, EncPart: enc})
	if err != nil {
		t.Fatal(err)
	}
	return frame(tokAPRep, asn1tools.AddASNAppTag(rb, asnAppTag.APREP))
}

func TestStartDelegates(t *testing.T) {
	svc, tgt := serviceTicket(t), testCredential(t)
	_, token, err := Start(svc, 0, &tgt, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, fl, cred := acceptAPReq(t, svc, token)
	if fl != FlagDeleg|FlagMutual|FlagInteg {
		t.Fatalf("flags: got %#x; want deleg|mutual|integ", fl)
	}
	var m messages.KRBCred
	if err := m.Unmarshal(cred); err != nil {
		t.Fatalf("KRB-CRED: %v", err)
	}
	// sealed with the session key of the ticket it travels with
	if err := m.DecryptEncPart(svc.Part.Key); err != nil {
		t.Fatalf("KRB-CRED: %v", err)
	}
	info := m.DecryptedEncPart.TicketInfo[0]
	if !info.PName.Equal(tgt.CName) || !bytes.Equal(info.Key.KeyValue, tgt.Part.Key.KeyValue) {
		t.Fatalf("delegated: got %s; want alice's TGT", info.PName.PrincipalNameString())
	}
}

func TestStartWithoutDelegation(t *testing.T) {
	svc := serviceTicket(t)
	_, token, err := Start(svc, FlagDeleg, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, fl, cred := acceptAPReq(t, svc, token)
	if fl != FlagMutual|FlagInteg || cred != nil {
		t.Fatalf("flags %#x, %d bytes delegated; want mutual|integ and nothing", fl, len(cred))
	}
}

func TestMICWithAcceptorSubkey(t *testing.T) {
	svc := serviceTicket(t)
	ctx, token, err := Start(svc, 0, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctx.MIC([]byte("early")); err == nil {
		t.Fatal("MIC before the AP-REP: got no error")
	}
	req, _, _ := acceptAPReq(t, svc, token)
	sub := testKey(t)
	if err := ctx.Accept(apRep(t, svc, req.Authenticator, &sub)); err != nil {
		t.Fatalf("Accept: %v", err)
	}
	msg := []byte("session id and request")
	b, err := ctx.MIC(msg)
	if err != nil {
		t.Fatal(err)
	}
	var mt gssapi.MICToken
	if err := mt.Unmarshal(b, false); err != nil {
		t.Fatalf("MIC token: %v", err)
	}
	mt.Payload = msg
	if ok, err := mt.Verify(sub, keyusage.GSSAPI_INITIATOR_SIGN); !ok {
		t.Fatalf("MIC with the acceptor's subkey: %v", err)
	}
	if mt.Flags != gssapi.MICTokenFlagAcceptorSubkey || mt.SndSeqNum != uint64(req.Authenticator.SeqNumber) {
		t.Fatalf("MIC: flags %#x seq %d; want acceptor-subkey and %d", mt.Flags, mt.SndSeqNum, req.Authenticator.SeqNumber)
	}
}

func TestMICWithSessionKey(t *testing.T) {
	svc := serviceTicket(t)
	ctx, token, err := Start(svc, 0, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	req, _, _ := acceptAPReq(t, svc, token)
	if err := ctx.Accept(apRep(t, svc, req.Authenticator, nil)); err != nil {
		t.Fatalf("Accept: %v", err)
	}
	b, err := ctx.MIC([]byte("m"))
	if err != nil {
		t.Fatal(err)
	}
	var mt gssapi.MICToken
	if err := mt.Unmarshal(b, false); err != nil {
		t.Fatal(err)
	}
	mt.Payload = []byte("m")
	if ok, err := mt.Verify(svc.Part.Key, keyusage.GSSAPI_INITIATOR_SIGN); !ok || mt.Flags != 0 {
		t.Fatalf("MIC with the session key: flags %#x, %v", mt.Flags, err)
	}
}

func TestAcceptRefuses(t *testing.T) {
	svc := serviceTicket(t)
	ctx, token, err := Start(svc, 0, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	req, _, _ := acceptAPReq(t, svc, token)
	other := req.Authenticator
	other.Cusec = (other.Cusec + 1) % 1000000
	if err := ctx.Accept(apRep(t, svc, other, nil)); err == nil {
		t.Fatal("an AP-REP for another authenticator: got no error")
	}
	if err := ctx.Accept(frame(tokAPReq, []byte{1})); err == nil {
		t.Fatal("an AP-REQ as reply: got no error")
	}
	e := messages.NewKRBError(svc.Ticket.SName, "SLUICE.RIG", errorcode.KRB_AP_ERR_SKEW, "clock skew too great")
	eb, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	err = ctx.Accept(frame(tokKRBError, eb))
	if ReasonOf(err) != ReasonClockSkew {
		t.Fatalf("KRB-ERROR skew: got %v (reason %q); want reason %s", err, ReasonOf(err), ReasonClockSkew)
	}
}

package krb

import (
	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/iana/patype"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// asExchange gets a forwardable TGT with the client's keytab. gokrb5's own
// Login would also start a renewing goroutine per client; the Source
// renews on use instead.
func asExchange(cl *client.Client, realm string) (*Credential, error) {
	req, err := messages.NewASReqForTGT(realm, cl.Config, cl.Credentials.CName())
	if err != nil {
		return nil, err
	}
	types.SetFlag(&req.ReqBody.KDCOptions, flags.Forwardable)
	rep, err := cl.ASExchange(realm, req, 0)
	if err != nil {
		return nil, err
	}
	return &Credential{Ticket: rep.Ticket, Part: rep.DecryptedEncPart, CRealm: rep.CRealm, CName: rep.CName}, nil
}

// forwardTGT asks the KDC for a TGT with the FORWARDED option and no
// addresses (RFC 4120 §2.6). gokrb5 builds TGS requests with the options
// of its configuration only, so the request's authenticator, which covers
// the request body, is made again here after the options are set.
func forwardTGT(cl *client.Client, tgt Credential) (Credential, error) {
	krbtgt := types.PrincipalName{NameType: nametype.KRB_NT_SRV_INST, NameString: []string{"krbtgt", tgt.CRealm}}
	req, err := messages.NewTGSReq(tgt.CName, tgt.CRealm, cl.Config, tgt.Ticket, tgt.Part.Key, krbtgt, false)
	if err != nil {
		return Credential{}, err
	}
	types.SetFlag(&req.ReqBody.KDCOptions, flags.Forwardable)
	types.SetFlag(&req.ReqBody.KDCOptions, flags.Forwarded)
	req.ReqBody.Addresses = nil
	if err := signTGSReq(&req, tgt); err != nil {
		return Credential{}, err
	}
	_, rep, err := cl.TGSExchange(req, tgt.CRealm, tgt.Ticket, tgt.Part.Key, 0)
	if err != nil {
		return Credential{}, err
	}
	return Credential{Ticket: rep.Ticket, Part: rep.DecryptedEncPart, CRealm: tgt.CRealm, CName: tgt.CName}, nil
}

// signTGSReq sets the PA-TGS-REQ of req: an AP-REQ with the TGT whose
// authenticator holds a checksum of the request body (RFC 4120 §5.4.1).
func signTGSReq(req *messages.TGSReq, tgt Credential) error {
	body, err := req.ReqBody.Marshal()
	if err != nil {
		return err
	}
	et, err := crypto.GetEtype(tgt.Part.Key.KeyType)
	if err != nil {
		return err
	}
	sum, err := et.GetChecksumHash(tgt.Part.Key.KeyValue, body, keyusage.TGS_REQ_PA_TGS_REQ_AP_REQ_AUTHENTICATOR_CHKSUM)
	if err != nil {
		return err
	}
	auth, err := types.NewAuthenticator(tgt.CRealm, tgt.CName)
	if err != nil {
		return err
	}
	auth.Cksum = types.Checksum{CksumType: et.GetHashID(), Checksum: sum}
	ap, err := messages.NewAPReq(tgt.Ticket, tgt.Part.Key, auth)
	if err != nil {
		return err
	}
	apb, err := ap.Marshal()
	if err != nil {
		return err
	}
	req.PAData = types.PADataSequence{{PADataType: patype.PA_TGS_REQ, PADataValue: apb}}
	return nil
}

// flagSet tells whether a ticket flag is set.
func flagSet(f asn1.BitString, flag int) bool {
	return types.IsFlagSet(&f, flag)
}

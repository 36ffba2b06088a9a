package krb

import (
	"fmt"
	"time"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/asnAppTag"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/msgtype"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// gokrb5 reads KRB-CRED but does not write it: these are the RFC 4120
// §5.8 structures, for marshaling (Realm is a GeneralString on both sides).

type credMsg struct {
	PVNO    int                 `asn1:"explicit,tag:0"`
	MsgType int                 `asn1:"explicit,tag:1"`
	Tickets asn1.RawValue       `asn1:"explicit,tag:2"`
	EncPart types.EncryptedData `asn1:"explicit,tag:3"`
}

type encCredPart struct {
	TicketInfo []credInfo `asn1:"explicit,tag:0"`
	Nonce      int        `asn1:"optional,explicit,tag:1"`
	Timestamp  time.Time  `asn1:"generalized,optional,explicit,tag:2"`
	Usec       int        `asn1:"optional,explicit,tag:3"`
}

type credInfo struct {
	Key       types.EncryptionKey `asn1:"explicit,tag:0"`
	PRealm    string              `asn1:"generalstring,optional,explicit,tag:1"`
	PName     types.PrincipalName `asn1:"optional,explicit,tag:2"`
	Flags     asn1.BitString      `asn1:"optional,explicit,tag:3"`
	AuthTime  time.Time           `asn1:"generalized,optional,explicit,tag:4"`
	StartTime time.Time           `asn1:"generalized,optional,explicit,tag:5"`
	EndTime   time.Time           `asn1:"generalized,optional,explicit,tag:6"`
	RenewTill time.Time           `asn1:"generalized,optional,explicit,tag:7"`
	SRealm    string              `asn1:"generalstring,optional,explicit,tag:8"`
	SName     types.PrincipalName `asn1:"optional,explicit,tag:9"`
}

// Credential is a ticket with what its holder needs to use it.
type Credential struct {
	Ticket messages.Ticket
	// Part is the decrypted part of the KDC's reply: the session key,
	// flags and times.
	Part   messages.EncKDCRepPart
	CRealm string
	CName  types.PrincipalName
}

// MarshalKRBCred writes a KRB-CRED message (RFC 4120 §5.8) carrying cred,
// its encrypted part sealed with key (the session key of the context the
// message travels in), as a GSS initiator delegates a ticket.
func MarshalKRBCred(cred Credential, key types.EncryptionKey, now time.Time) ([]byte, error) {
	now = now.UTC()
	part := encCredPart{
		TicketInfo: []credInfo{{
			Key:       cred.Part.Key,
			PRealm:    cred.CRealm,
			PName:     cred.CName,
			Flags:     cred.Part.Flags,
			AuthTime:  cred.Part.AuthTime,
			StartTime: cred.Part.StartTime,
			EndTime:   cred.Part.EndTime,
			RenewTill: cred.Part.RenewTill,
			SRealm:    cred.Ticket.Realm,
			SName:     cred.Ticket.SName,
		}},
		Timestamp: now.Truncate(time.Second),
		Usec:      now.Nanosecond() / 1000,
	}
	pb, err := asn1.Marshal(part)
	if err != nil {
		return nil, fmt.Errorf("krb: KRB-CRED: %w", err)
	}
	pb = asn1tools.AddASNAppTag(pb, asnAppTag.EncKrbCredPart)
	enc, err := crypto.GetEncryptedData(pb, key, keyusage.KRB_CRED_ENCPART, 0)
	if err != nil {
		return nil, fmt.Errorf("krb: KRB-CRED: %w", err)
	}
	tb, err := cred.Ticket.Marshal()
	if err != nil {
		return nil, fmt.Errorf("krb: KRB-CRED: ticket: %w", err)
	}
	seq, err := asn1.Marshal(asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagSequence, IsCompound: true, Bytes: tb})
	if err != nil {
		return nil, fmt.Errorf("krb: KRB-CRED: %w", err)
	}
	b, err := asn1.Marshal(credMsg{
		PVNO:    5,
		MsgType: msgtype.KRB_CRED,
		// a RawValue is written as it is, explicit tag or not: the
		// [2] around the SEQUENCE OF Ticket is made here
		Tickets: asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 2, IsCompound: true, Bytes: seq},
		EncPart: enc,
	})
	if err != nil {
		return nil, fmt.Errorf("krb: KRB-CRED: %w", err)
	}
	return asn1tools.AddASNAppTag(b, asnAppTag.KRBCred), nil
}

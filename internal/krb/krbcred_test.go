package krb

import (
	"crypto/rand"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

func testKey(t *testing.T) types.EncryptionKey {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return types.EncryptionKey{KeyType: etypeID.AES256_CTS_HMAC_SHA1_96, KeyValue: k}
}

// testCredential is a TGT as a KDC would give it, its ticket sealed with a
// key nobody here needs.
func testCredential(t *testing.T) Credential {
	t.Helper()
	enc, err := crypto.GetEncryptedData([]byte("ticket part"), testKey(t), keyusage.KDC_REP_TICKET, 1)
	if err != nil {
		t.Fatal(err)
	}
	f := types.NewKrbFlags()
	types.SetFlag(&f, flags.Forwardable)
	types.SetFlag(&f, flags.Forwarded)
	now := time.Now().UTC().Truncate(time.Second)
	krbtgt := types.PrincipalName{NameType: nametype.KRB_NT_SRV_INST, NameString: []string{"krbtgt", "SLUICE.RIG"}}
	return Credential{
		Ticket: messages.Ticket{TktVNO: 5, Realm: "SLUICE.RIG", SName: krbtgt, EncPart: enc},
		Part: messages.EncKDCRepPart{
			Key: testKey(t), Flags: f, AuthTime: now, StartTime: now, EndTime: now.Add(10 * time.Hour),
			RenewTill: now.Add(24 * time.Hour), SRealm: "SLUICE.RIG", SName: krbtgt,
		},
		CRealm: "SLUICE.RIG",
		CName:  types.PrincipalName{NameType: nametype.KRB_NT_PRINCIPAL, NameString: []string{"alice"}},
	}
}

// TestMarshalKRBCred reads the message back with gokrb5's own reader and
// the session key it was sealed with.
func TestMarshalKRBCred(t *testing.T) {
	cred, key := testCredential(t), testKey(t)
	b, err := MarshalKRBCred(cred, key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var m messages.KRBCred
	if err := m.Unmarshal(b); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if len(m.Tickets) != 1 || m.Tickets[0].Realm != "SLUICE.RIG" || !m.Tickets[0].SName.Equal(cred.Ticket.SName) {
		t.Fatalf("tickets: got %+v; want the TGT", m.Tickets)
	}
	if err := m.DecryptEncPart(key); err != nil {
		t.Fatalf("decrypt with the session key: %v", err)
	}
	info := m.DecryptedEncPart.TicketInfo
	if len(info) != 1 {
		t.Fatalf("ticket info: got %d; want 1", len(info))
	}
	got := info[0]
	if got.PRealm != "SLUICE.RIG" || !got.PName.Equal(cred.CName) || string(got.Key.KeyValue) != string(cred.Part.Key.KeyValue) {
		t.Fatalf("ticket info: got %s@%s; want alice@SLUICE.RIG with the TGT's session key", got.PName.PrincipalNameString(), got.PRealm)
	}
	if !got.EndTime.Equal(cred.Part.EndTime) || !types.IsFlagSet(&got.Flags, flags.Forwarded) {
		t.Fatalf("ticket info: end %s, flags %x; want %s and forwarded", got.EndTime, got.Flags.Bytes, cred.Part.EndTime)
	}
	if err := m.DecryptEncPart(testKey(t)); err == nil {
		t.Fatal("decrypt with another key: got no error")
	}
}

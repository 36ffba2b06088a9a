package doctor

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/krb"
)

// TestKerberosCheck: a ticket is OK with its end; each reason a ticket
// could not be got gives FAIL with the fix for that reason.
func TestKerberosCheck(t *testing.T) {
	h := config.SSH{Auth: "kerberos", Kerberos: config.Kerberos{Principal: "alice", KeytabFile: "/etc/sluice/alice.keytab"}}
	var tgt krb.Credential
	tgt.Part.EndTime = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	if c := kerberosCheck(h, tgt, nil); c.Status != OK || !strings.Contains(c.Found, "2026-12-04T10:00:00Z") || !strings.Contains(c.Found, "alice") {
		t.Errorf("with a ticket: %+v; want OK naming the principal and the ticket's end", c)
	}
	for reason, fix := range map[krb.Reason]string{
		krb.ReasonClockSkew:      "clock",
		krb.ReasonWrongPrincipal: "Network.SSH.Principal",
		krb.ReasonWrongKey:       "keytab again",
		krb.ReasonKDCUnreachable: "port 88",
		krb.ReasonOther:          "kinit",
	} {
		err := &krb.Error{Op: "get a ticket", Reason: reason, Err: errors.New("refused")}
		c := kerberosCheck(h, krb.Credential{}, err)
		if c.Status != Fail || !strings.Contains(c.Fix, fix) || !strings.Contains(c.Found, "refused") {
			t.Errorf("%s: %+v; want FAIL with the error and a fix about %q", reason, c, fix)
		}
	}
}

package krb

import (
	"errors"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		text string
		want Reason
	}{
		{"KRB Error: (37) KRB_AP_ERR_SKEW Clock skew too great", ReasonClockSkew},
		{"[Root cause: KDC_Error] KDC_Error: AS Exchange Error: kerberos error response from KDC: KRB Error: (6) KDC_ERR_C_PRINCIPAL_UNKNOWN Client not found in Kerberos database", ReasonWrongPrincipal},
		{"KRB Error: (24) KDC_ERR_PREAUTH_FAILED Pre-authentication information was invalid", ReasonWrongKey},
		{"[Root cause: Networking_Error] Networking_Error: AS Exchange Error: failed sending AS_REQ to KDC: failed to communicate with KDC", ReasonKDCUnreachable},
		{`error getting key from credentials: matching key not found in keytab. Looking for "alice" realm: SLUICE.RIG`, ReasonWrongKey},
		{"something else", ReasonOther},
	} {
		err := classify("get a ticket", errors.New(tc.text))
		if got := ReasonOf(err); got != tc.want {
			t.Errorf("%q: got %s; want %s", tc.text, got, tc.want)
		}
		if !strings.HasPrefix(err.Error(), "krb: get a ticket: ") || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("message %q: want the operation, the hint and the cause", err)
		}
	}
	if ReasonOf(errors.New("plain")) != "" {
		t.Error("ReasonOf(a plain error): want empty")
	}
}

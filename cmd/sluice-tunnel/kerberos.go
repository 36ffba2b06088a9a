package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/sluice-hpc/sluice/internal/krb"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	"golang.org/x/crypto/ssh"
)

// kerberosFlags log in with gssapi-with-mic and a keytab instead of a key.
type kerberosFlags struct {
	keytab    string
	principal string
	krb5Conf  string
	realm     string
	kdcs      string // comma-separated host[:port]
}

func (k *kerberosFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&k.keytab, "keytab", "", "a keytab of --principal: log in with Kerberos (gssapi-with-mic) instead of --key")
	fs.StringVar(&k.principal, "principal", "", "the Kerberos principal, user or user@REALM (with --keytab)")
	fs.StringVar(&k.krb5Conf, "krb5-conf", "", "a krb5.conf naming the realm and its KDCs (with --keytab; or --realm and --kdc)")
	fs.StringVar(&k.realm, "realm", "", "the Kerberos realm (with --keytab and --kdc)")
	fs.StringVar(&k.kdcs, "kdc", "", "the realm's KDCs, `HOST[:PORT][,...]` (with --keytab and --realm)")
}

// check reports what is missing or conflicting; nothing when --keytab is
// not given and no other Kerberos flag is.
func (k *kerberosFlags) check() []error {
	if k.keytab == "" {
		if k.principal != "" || k.krb5Conf != "" || k.realm != "" || k.kdcs != "" {
			return []error{errors.New("--principal, --krb5-conf, --realm and --kdc need --keytab")}
		}
		return nil
	}
	var errs []error
	if k.principal == "" {
		errs = append(errs, errors.New("--principal is required with --keytab"))
	}
	switch {
	case k.krb5Conf != "" && (k.realm != "" || k.kdcs != ""):
		errs = append(errs, errors.New("--krb5-conf: either a krb5.conf or --realm and --kdc, not both"))
	case k.krb5Conf == "" && (k.realm == "" || k.kdcs == ""):
		errs = append(errs, errors.New("--keytab needs --krb5-conf, or --realm and --kdc"))
	}
	for _, kdc := range strings.Split(k.kdcs, ",") {
		if k.kdcs != "" {
			if _, err := parseHostPort(kdc, 88); err != nil {
				errs = append(errs, fmt.Errorf("--kdc: %w", err))
			}
		}
	}
	return errs
}

// gssapi returns the hop's gssapi-with-mic method, the TGT delegated on
// the login hop only when the reverse tunnel runs srun there (SPEC S5).
func (k *kerberosFlags) gssapi(c *config) (func(string, bool) ssh.AuthMethod, error) {
	var (
		kc  *krbconfig.Config
		err error
	)
	if k.krb5Conf != "" {
		kc, err = krb.LoadConfig(k.krb5Conf)
	} else {
		kc, err = krb.NewConfig(k.realm, strings.Split(k.kdcs, ","))
	}
	if err != nil {
		return nil, fmt.Errorf("--krb5-conf: %w", err)
	}
	src := &krb.Source{KeytabFile: k.keytab, Principal: k.principal, Config: kc}
	return func(host string, login bool) ssh.AuthMethod {
		return sshx.KerberosAuth(src, host, delegates(c, login))
	}, nil
}

// delegates says whether a hop sends the TGT: the login hop of a reverse
// tunnel carried by srun, whose srun needs it; no other.
func delegates(c *config, login bool) bool {
	return login && c.mode == modeReverse && c.nodeExec == tunnel.NodeExecSrun
}

package site

import (
	"fmt"

	"github.com/jcmturner/gokrb5/v8/config"
	sluiceconfig "github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/krb"
)

// KerberosSource returns the ticket source Network.SSH's Kerberos keys
// describe: the keytab file and principal, with the krb5.conf file or the
// realm and KDCs. The keytab is read when the first ticket is needed.
func KerberosSource(h sluiceconfig.SSH) (*krb.Source, error) {
	var (
		c   *config.Config
		err error
	)
	if h.Krb5ConfFile != "" {
		c, err = krb.LoadConfig(h.Krb5ConfFile)
	} else {
		c, err = krb.NewConfig(h.Realm, h.KDCs)
	}
	if err != nil {
		return nil, fmt.Errorf("kerberos: %w", err)
	}
	return &krb.Source{KeytabFile: h.KeytabFile, Principal: h.Principal, Config: c}, nil
}

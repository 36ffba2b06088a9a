package config

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	"github.com/sluice-hpc/sluice/internal/hostname"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Kerberos configures Network.SSH.Auth kerberos: gssapi-with-mic with
// tickets got from a keytab, on every SSH connection sluice makes.
type Kerberos struct {
	// Principal is user or user@REALM (the realm of the Kerberos
	// configuration if absent).
	Principal string `yaml:"Principal"`
	// KeytabFile is the principal's keytab, for the virtual kubelet itself.
	// It is read again whenever a new ticket is needed.
	KeytabFile string `yaml:"KeytabFile"`
	// KeytabSecret names the Secret holding the keytab (key "keytab") for
	// the shadows.
	KeytabSecret string `yaml:"KeytabSecret"`
	// Krb5ConfFile is a krb5.conf naming the realm and its KDCs. Either it
	// or Realm and KDCs.
	Krb5ConfFile string `yaml:"Krb5ConfFile"`
	// Realm and KDCs (host or host:port, port 88 if absent) stand for a
	// krb5.conf.
	Realm string   `yaml:"Realm"`
	KDCs  []string `yaml:"KDCs"`
}

var (
	realmName     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]{0,253}$`)
	principalName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}(/[A-Za-z0-9_.-]{1,253})?(@[A-Za-z0-9][A-Za-z0-9.-]{0,253})?$`)
)

// validate checks the keys when auth is kerberos, and that none is set
// otherwise. shadows says whether shadows reach the site (they need the
// keytab as a Secret, and bastion's key Secret).
func (k Kerberos) validate(bad reporter, auth string, access Access, shadows bool, bastion Bastion) {
	const p = "Network.SSH."
	if auth != "kerberos" {
		if k.Principal != "" || k.KeytabFile != "" || k.KeytabSecret != "" || k.Krb5ConfFile != "" || k.Realm != "" || len(k.KDCs) > 0 {
			bad(p+"Principal", "the Kerberos keys need Network.SSH.Auth kerberos, got %q", auth)
		}
		return
	}
	if !principalName.MatchString(k.Principal) {
		bad(p+"Principal", "must be user or user@REALM, got %q", k.Principal)
	}
	absPath(bad, p+"Krb5ConfFile", k.Krb5ConfFile, false)
	switch {
	case k.Krb5ConfFile != "" && (k.Realm != "" || len(k.KDCs) > 0):
		bad(p+"Krb5ConfFile", "either a krb5.conf or Realm and KDCs, not both")
	case k.Krb5ConfFile == "":
		if !realmName.MatchString(k.Realm) {
			bad(p+"Realm", "must be a realm name (or set Krb5ConfFile), got %q", k.Realm)
		}
		if len(k.KDCs) == 0 {
			bad(p+"KDCs", "at least one KDC is needed (or set Krb5ConfFile)")
		}
		for _, kdc := range k.KDCs {
			if err := checkHostPort(kdc); err != nil {
				bad(p+"KDCs", "%q: %v", kdc, err)
			}
		}
	}
	if access == AccessSSH {
		absPath(bad, p+"KeytabFile", k.KeytabFile, true)
	}
	if k.KeytabSecret != "" {
		if msgs := validation.IsDNS1123Subdomain(k.KeytabSecret); len(msgs) > 0 {
			bad(p+"KeytabSecret", "%s", strings.Join(msgs, "; "))
		}
	}
	if shadows {
		k.validateShadows(bad, bastion)
	}
}

// validateShadows checks what the shadows' tunnels need to log in with
// Kerberos: the keytab as a Secret, and the realm and KDCs as flags (a
// shadow cannot read a krb5.conf on the virtual kubelet's disk); a bastion
// is logged into with a key of its own, there being no login key.
func (k Kerberos) validateShadows(bad reporter, bastion Bastion) {
	const p = "Network.SSH."
	if k.KeytabSecret == "" {
		bad(p+"KeytabSecret", "is required with Network.EnableTunnel: the shadows' tunnels read the keytab (key keytab) from this Secret")
	}
	if k.Krb5ConfFile != "" {
		bad(p+"Krb5ConfFile", "the shadows cannot read a krb5.conf on the virtual kubelet's disk: with Network.EnableTunnel give Realm and KDCs instead")
	}
	if bastion.Host != "" && bastion.KeySecret == "" {
		bad(p+"Bastion.KeySecret", "is required with Auth kerberos and Network.EnableTunnel: the shadows log in to the bastion with a key, and have no login key to share")
	}
}

// checkHostPort accepts host or host:port.
func checkHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return hostname.CheckHost(s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port must be 1-65535, got %q", port)
	}
	return hostname.CheckHost(host)
}

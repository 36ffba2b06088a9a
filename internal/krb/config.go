package krb

import (
	"errors"
	"fmt"
	"net"

	"github.com/jcmturner/gokrb5/v8/config"
)

// LoadConfig reads a krb5.conf file.
func LoadConfig(file string) (*config.Config, error) {
	c, err := config.Load(file)
	if err != nil {
		return nil, fmt.Errorf("krb: krb5.conf %s: %w", file, err)
	}
	return c, nil
}

// NewConfig returns a configuration naming realm as the default realm and
// its KDCs (host or host:port, port 88 if absent), with no DNS look-ups.
func NewConfig(realm string, kdcs []string) (*config.Config, error) {
	if realm == "" || len(kdcs) == 0 {
		return nil, errors.New("krb: a realm and at least one KDC are needed")
	}
	c := config.New()
	c.LibDefaults.DefaultRealm = realm
	c.LibDefaults.DNSLookupKDC = false
	c.LibDefaults.DNSLookupRealm = false
	c.LibDefaults.Forwardable = true
	var addrs []string
	for _, k := range kdcs {
		if _, _, err := net.SplitHostPort(k); err != nil {
			k = net.JoinHostPort(k, "88")
		}
		addrs = append(addrs, k)
	}
	c.Realms = []config.Realm{{Realm: realm, KDC: addrs}}
	return c, nil
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/sluice-hpc/sluice/internal/hostname"
	"k8s.io/apimachinery/pkg/util/validation"
)

// serveFlags are the gateway's own flags (SPEC S14): where it serves
// shadows, its host key, and which shadows it serves; the site's access
// is the tunnels' (--login, --key, ...).
type serveFlags struct {
	listen  string // ADDR:PORT of the SSH server for shadows
	hostKey string
	// hostKeySecret keeps the host key in a Secret instead of hostKey's
	// file; publish is the ConfigMap its public half is written to, as
	// the known_hosts line of advertise.
	hostKeySecret objectRef
	publish       objectRef
	advertise     string
	kubeconfig    string // "" for the in-cluster configuration
	node          string
	credNS        string
	tenantNS      string
	trusted       []string
}

func (s *serveFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&s.listen, "listen", fmt.Sprintf(":%d", defaultGatewayPort), "ADDR:PORT the shadows' SSH server listens on, ADDR an IP address or empty for all")
	fs.StringVar(&s.hostKey, "host-key", "", "the gateway's private host key file, unencrypted, which shadows pin (required, unless --host-key-secret)")
	fs.Var(&s.hostKeySecret, "host-key-secret", "`NAMESPACE/NAME` of the Secret holding the gateway's host key (key ssh-privatekey), shared by every replica; it must exist, and is filled with a new ed25519 key when empty")
	fs.Var(&s.publish, "publish-host-keys", "`NAMESPACE/NAME` of the ConfigMap (key known_hosts) the public half of the host key is written to, for the shadows to pin (Network.Gateway.HostKeys); it must exist, labelled app.kubernetes.io/component=gateway; needs --advertise")
	fs.StringVar(&s.advertise, "advertise", "", "the gateway's HOST:PORT as shadows dial it (Network.Gateway.Address), the host of the published known_hosts line")
	fs.StringVar(&s.kubeconfig, "kubeconfig", "", "kubeconfig file of the API server that reviews the shadows' tokens (default: the in-cluster configuration)")
	fs.StringVar(&s.node, "node", "", "the virtual node whose shadows are served, as sluice-vk's NodeName (required)")
	fs.StringVar(&s.credNS, "credentials-namespace", "", "sluice's own namespace, where sluice-vk records the shadow namespaces it made (required, unless --tenant-namespace)")
	fs.StringVar(&s.tenantNS, "tenant-namespace", "", "on a node confined to one tenant namespace, that namespace: the only one shadows may be in")
	fs.Func("trusted-namespaces", "shadow namespaces sluice did not make that the operator trusts, `NS[,NS...]` (Network.TrustedShadowNamespaces)", func(v string) error {
		for ns := range strings.SplitSeq(v, ",") {
			if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
				return fmt.Errorf("%q is not a namespace: %s", ns, strings.Join(msgs, "; "))
			}
			s.trusted = append(s.trusted, ns)
		}
		return nil
	})
}

// check checks the gateway's flags, naming the flag at fault.
func (s *serveFlags) check() []error {
	var fe flagErrs
	addr, err := parseListenAddr(s.listen)
	if err != nil {
		fe.fail("listen", err)
	}
	s.listen = addr
	switch {
	case s.hostKey != "" && s.hostKeySecret.name != "":
		fe = append(fe, errors.New("--host-key and --host-key-secret: give one"))
	case s.hostKeySecret.name == "":
		fe.required("host-key", s.hostKey)
	}
	switch {
	case s.publish.name != "" && s.advertise == "":
		fe = append(fe, errors.New("--advertise is required with --publish-host-keys"))
	case s.advertise != "" && s.publish.name == "":
		fe = append(fe, errors.New("--advertise is only for --publish-host-keys"))
	case s.advertise != "":
		if err := hostname.CheckHostPort(s.advertise); err != nil {
			fe.fail("advertise", err)
		}
	}
	if fe.required("node", s.node) {
		if msgs := validation.IsValidLabelValue(s.node); len(msgs) > 0 {
			fe.fail("node", fmt.Errorf("%q is not a label value: %s", s.node, strings.Join(msgs, "; ")))
		}
	}
	for _, f := range []struct{ flag, ns string }{{"credentials-namespace", s.credNS}, {"tenant-namespace", s.tenantNS}} {
		flag, ns := f.flag, f.ns
		if msgs := validation.IsDNS1123Label(ns); ns != "" && len(msgs) > 0 {
			fe.fail(flag, fmt.Errorf("%q is not a namespace: %s", ns, strings.Join(msgs, "; ")))
		}
	}
	if s.credNS == "" && s.tenantNS == "" {
		fe = append(fe, errors.New("--credentials-namespace is required, unless --tenant-namespace"))
	}
	return fe
}

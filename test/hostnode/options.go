package hostnode

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
)

// DefaultNodeName is the host node's name when Options.NodeName is empty.
const DefaultNodeName = "rig-host"

// Options configure a host node.
type Options struct {
	// NodeName is the node's name. If empty, DefaultNodeName.
	NodeName string
	// Kubeconfig is the kubeconfig file (the rig's admin kubeconfig,
	// RIG_KUBECONFIG, works). Required unless RestConfig is set.
	Kubeconfig string
	// RestConfig, if set, is used instead of Kubeconfig.
	RestConfig *rest.Config
	// Images maps a container image to the host binary that runs for it,
	// e.g. "ghcr.io/sluice-hpc/sluice-tunnel:latest" →
	// "/tmp/x/sluice-tunnel". An image with no tag also matches its
	// ":latest" mapping and the other way round.
	Images map[string]string
	// Backends maps a Service port to a fixed backend host:port, for
	// Services without a selector (e.g. default/kubernetes:443 →
	// 127.0.0.1:6443).
	Backends map[ServicePortKey]string
	// ProxyNamespaces, if set, limits the Service proxy to the Services
	// of these namespaces, so that a second host node (a test's) does not
	// take the proxy addresses of the rig's Services.
	ProxyNamespaces []string
	// StateDir holds the pods' directories. If empty,
	// /var/lib/sluice-hostnode/NODENAME. Its pods directory is emptied at
	// start.
	StateDir string
	// HostsFile, if set, is kept holding every Service's qualified names
	// on its proxy address, in /etc/hosts format.
	HostsFile string
	// KubeletListen is the kubelet API's host:port. If empty,
	// 127.0.0.1:0 (a free port, which the node object carries).
	KubeletListen string
	// InitPath is the binary that runs as the init helper of each process
	// (a binary whose main calls InitMain first). If empty, the running
	// executable.
	InitPath string
	// MaxBackoff caps the wait before a container restarts. If zero, 10s.
	MaxBackoff time.Duration
	// Logger. If nil, slog.Default().
	Logger *slog.Logger
}

// withDefaults fills the empty fields and checks the others.
func (o Options) withDefaults() (Options, error) {
	if o.NodeName == "" {
		o.NodeName = DefaultNodeName
	}
	if errs := validation.IsDNS1123Subdomain(o.NodeName); len(errs) > 0 {
		return o, fmt.Errorf("node name %q: %s", o.NodeName, strings.Join(errs, "; "))
	}
	if o.Kubeconfig == "" && o.RestConfig == nil {
		return o, errors.New("kubeconfig: required")
	}
	if o.StateDir == "" {
		o.StateDir = filepath.Join("/var/lib/sluice-hostnode", o.NodeName)
	}
	if o.KubeletListen == "" {
		o.KubeletListen = "127.0.0.1:0"
	}
	if o.InitPath == "" {
		exe, err := os.Executable()
		if err != nil {
			return o, fmt.Errorf("init path: %w", err)
		}
		o.InitPath = exe
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	for image, path := range o.Images {
		if err := checkExecutable(path); err != nil {
			return o, fmt.Errorf("image %s: %w", image, err)
		}
	}
	if err := checkExecutable(o.InitPath); err != nil {
		return o, fmt.Errorf("init path: %w", err)
	}
	return o, nil
}

// checkExecutable fails unless path is an absolute path to an executable
// file.
func checkExecutable(path string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%s: not an absolute path", path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s: not an executable file", path)
	}
	return nil
}

// ParseImage parses IMAGE=PATH, the --image flag's value.
func ParseImage(s string) (image, path string, err error) {
	image, path, ok := strings.Cut(s, "=")
	if !ok || image == "" || path == "" {
		return "", "", fmt.Errorf("image %q: want IMAGE=PATH", s)
	}
	return image, path, nil
}

// ParseBackend parses NAMESPACE/NAME:PORT=HOST:PORT, the --backend flag's
// value.
func ParseBackend(s string) (ServicePortKey, string, error) {
	bad := func(why string) (ServicePortKey, string, error) {
		return ServicePortKey{}, "", fmt.Errorf("backend %q: want NAMESPACE/NAME:PORT=HOST:PORT: %s", s, why)
	}
	svc, addr, ok := strings.Cut(s, "=")
	if !ok {
		return bad("no =")
	}
	nsName, portStr, ok := strings.Cut(svc, ":")
	if !ok {
		return bad("no Service port")
	}
	ns, name, ok := strings.Cut(nsName, "/")
	if !ok || ns == "" || name == "" {
		return bad("no NAMESPACE/NAME")
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return bad("bad Service port")
	}
	host, bport, err := net.SplitHostPort(addr)
	if err != nil {
		return bad(err.Error())
	}
	if _, err := strconv.ParseUint(bport, 10, 16); err != nil || host == "" {
		return bad("bad backend address")
	}
	if _, err := netip.ParseAddr(host); err != nil && len(validation.IsDNS1123Subdomain(host)) > 0 {
		return bad("bad backend host")
	}
	return ServicePortKey{Namespace: ns, Name: name, Port: int32(port)}, addr, nil
}

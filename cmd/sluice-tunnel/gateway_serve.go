package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/sluice-hpc/sluice/internal/gateway"
	"github.com/sluice-hpc/sluice/internal/kubeconfig"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	"github.com/sluice-hpc/sluice/internal/version"
	"golang.org/x/crypto/ssh"
	"k8s.io/client-go/kubernetes"
)

// The gateway's rate limit on the API server. An authentication not
// cached makes 7 requests (6 GETs and a TokenReview): client-go's default
// of 5 a second and bursts of 10 would let a reconnection storm of a few
// hundred shadows through in minutes; these, in seconds.
const (
	gatewayQPS   = 100
	gatewayBurst = 200
)

// gatewayServer is a gateway ready to serve: its files read, its client
// made, before any address is listened on. Its host key is read at start
// when kept in a Secret (hostKey nil until then).
type gatewayServer struct {
	hostKey ssh.Signer
	client  kubernetes.Interface
	auth    *gateway.TokenAuthenticator
	site    *gateway.Site
	// placements follows sluice-vk's records of where each job runs.
	placements *gateway.PlacementWatcher
}

// loadGateway reads the gateway's host key file and kube configuration and
// makes its authenticator; hop is the site's access. A file missing or
// unusable is a configuration error naming its flag.
func loadGateway(c *config, hop *tunnel.Hop, log *slog.Logger) (*gatewayServer, error) {
	var key ssh.Signer
	if c.serve.hostKey != "" {
		// The host key comes from a Secret shared through the pod's fsGroup.
		var err error
		if key, err = sshx.PodSigner(c.serve.hostKey); err != nil {
			return nil, fmt.Errorf("--host-key: %w", err)
		}
	}
	rc, err := kubeconfig.Load(c.serve.kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = gatewayQPS, gatewayBurst
	rc.UserAgent = "sluice-gateway/" + version.String()
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	scope := gateway.ShadowScope{
		Node:                 c.serve.node,
		CredentialsNamespace: c.serve.credNS,
		TenantNamespace:      c.serve.tenantNS,
		TrustedNamespaces:    c.serve.trusted,
	}
	auth, err := gateway.NewTokenAuthenticator(gateway.TokenConfig{Client: client, Shadows: scope})
	if err != nil {
		return nil, err
	}
	return &gatewayServer{
		hostKey:    key,
		client:     client,
		auth:       auth,
		site:       &gateway.Site{Hop: hop, Log: log},
		placements: &gateway.PlacementWatcher{Client: client, Scope: scope},
	}, nil
}

// hostKeys takes the host key from its Secret when c keeps it there, and
// publishes its public half when c asks, before the gateway serves: a
// shadow pins what the ConfigMap says.
func (g *gatewayServer) hostKeys(ctx context.Context, c *config, log *slog.Logger) error {
	if c.serve.hostKeySecret.name != "" {
		key, err := ensureHostKey(ctx, g.client, c.serve.hostKeySecret, log)
		if err != nil {
			return err
		}
		g.hostKey = key
	}
	if c.serve.publish.name == "" {
		return nil
	}
	return publishHostKeys(ctx, g.client, c.serve.publish, c.serve.advertise, g.hostKey.PublicKey(), log)
}

// serveGateway serves shadows on c's listen address until ctx ends, with
// its metrics server when c asks for one, then closes every shadow's
// connection and the site's. It returns an error only when it cannot
// start (its host key not kept or published, an address it cannot listen
// on); a site that cannot be reached is
// logged and retried at the next shadow's connection.
func serveGateway(ctx context.Context, c *config, g *gatewayServer, log *slog.Logger) error {
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		wg.Wait()
	}()
	if err := g.hostKeys(ctx, c, log); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.serve.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if c.metrics != "" {
		srv, err := listenMetrics(c.metrics, healthMux(newRegistry()), log)
		if err != nil {
			ln.Close()
			return err
		}
		wg.Go(func() { srv.Run(ctx) })
	}
	defer g.site.Close()
	srv := &gateway.Server{HostKey: g.hostKey, Auth: g.auth, Site: g.site, Log: log}
	// A requeue or a move is learnt from sluice-vk's records: the gateway
	// is another process, which sluice-vk does not call.
	g.placements.OnChange = srv.PlacementChanged
	wg.Go(func() {
		if err := g.placements.Run(ctx); err != nil {
			log.Error("placement watcher stopped", "error", err)
		}
	})
	log.Info("gateway listening", "version", version.String(), "addr", ln.Addr().String(),
		"login", c.login, "user", c.user, "node", c.serve.node,
		"host_key", ssh.FingerprintSHA256(g.hostKey.PublicKey()))
	if err := srv.Serve(ctx, ln); err != nil {
		return err
	}
	log.Info("gateway stopped")
	return nil
}

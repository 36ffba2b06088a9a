package vk

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/kubeletstream"
	"github.com/sluice-hpc/sluice/internal/provider"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
)

// kubeletServer is the node's kubelet API: HTTPS, clients authenticated by
// a certificate of the cluster's client CA and authorised with a
// SubjectAccessReview (nodes/proxy, nodes/log, nodes/stats,
// nodes/metrics…), as a kubelet does. It serves logs, exec, attach,
// port-forward, and the pods' usage from Slurm's accounting
// (/stats/summary, /metrics/resource).
type kubeletServer struct {
	srv     *http.Server
	log     *slog.Logger
	streams *kubeletstream.Server
}

func kubeletAPI(ctx context.Context, log *slog.Logger, cfg *config.Config, rc *rest.Config, client kubernetes.Interface, prov *provider.Provider, pods corev1listers.PodLister, relay func(context.Context) (string, error)) (*kubeletServer, error) {
	cert, self, err := servingCert(cfg.Node.KubeletAPI, cfg.NodeName, cfg.Node.InternalIP, time.Now())
	if err != nil {
		return nil, err
	}
	if self {
		log.Info("sluice-vk: kubelet API serves a self-signed certificate (Node.KubeletAPI.CertFile is empty)")
	}
	caPEM, err := clientCA(cfg.Node.KubeletAPI, rc)
	if err != nil {
		return nil, err
	}
	ca, err := dynamiccertificates.NewStaticCAContent("kubelet-client-ca", caPEM)
	if err != nil {
		return nil, fmt.Errorf("kubelet API client CA: %w", err)
	}
	auth, err := nodeutil.WebhookAuth(client, cfg.NodeName, func(c *nodeutil.WebhookAuthConfig) error {
		c.AuthnConfig.ClientCertificateCAContentProvider = ca
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("kubelet API auth: %w", err)
	}
	streams, err := streamServer(cfg, prov, prov, relay, log)
	if err != nil {
		return nil, err
	}
	// streams.Wrap serves exec, attach and port-forward itself, with its
	// bounds and timeouts; the pod handler serves the rest.
	h := api.PodHandler(api.PodHandlerConfig{
		GetContainerLogs: prov.GetContainerLogs,
		GetPods:          prov.GetPods,
		GetPodsFromKubernetes: func(context.Context) ([]*corev1.Pod, error) {
			return pods.List(labels.Everything())
		},
		GetStatsSummary:    prov.StatsSummary,
		GetMetricsResource: prov.MetricsResource,
	}, false)
	srv := &http.Server{
		Handler: withAuth(auth, streams.Wrap(h)),
		TLSConfig: &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{cert},
			// the authenticator verifies the chain against the client CA
			ClientAuth: tls.RequestClientCert,
		},
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	return &kubeletServer{srv: srv, log: log, streams: streams}, nil
}

// serve serves on ln until ctx ends.
func (k *kubeletServer) serve(ctx context.Context, ln net.Listener) error {
	err := serveUntil(ctx, k.srv, func() error { return k.srv.ServeTLS(ln, "", "") })
	if k.streams.Conns != nil {
		k.streams.Conns.Close()
	}
	if err != nil {
		return fmt.Errorf("kubelet API: %w", err)
	}
	return nil
}

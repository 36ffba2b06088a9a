package vk

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/kubeletstream"
	"github.com/sluice-hpc/sluice/internal/provider"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
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
	// certs, if set, serves the certificate (Certificate: csr).
	certs *csrCertificate
}

func kubeletAPI(ctx context.Context, log *slog.Logger, cfg *config.Config, rc *rest.Config, client kubernetes.Interface, recorder record.EventRecorder, prov *provider.Provider, pods corev1listers.PodLister, relay func(context.Context) (string, error)) (*kubeletServer, error) {
	tlsConfig := &tls.Config{
		MinVersion: tls.VersionTLS12,
		// the authenticator verifies the chain against the client CA
		ClientAuth: tls.RequestClientCert,
	}
	var certs *csrCertificate
	switch a := cfg.Node.KubeletAPI; a.Certificate {
	case config.CertificateCSR:
		certs = &csrCertificate{
			Client: client, NodeName: cfg.NodeName, IP: net.ParseIP(cfg.Node.InternalIP),
			Lifetime: a.CertificateLifetime, RenewBefore: a.CertificateRenewBefore, Logger: log,
			Event: nodeEvent(recorder, cfg.NodeName),
		}
		tlsConfig.GetCertificate = certs.GetCertificate
	default:
		cert, err := servingCert(a, cfg.NodeName, cfg.Node.InternalIP, time.Now())
		if err != nil {
			return nil, err
		}
		if a.Certificate == config.CertificateSelfSigned {
			log.Info("sluice-vk: kubelet API serves a self-signed certificate (Node.KubeletAPI.Certificate: self-signed)")
		}
		tlsConfig.Certificates = []tls.Certificate{cert}
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
		Handler:   withAuth(auth, streams.Wrap(h)),
		TLSConfig: tlsConfig,
		// handshakes refused while the certificate waits for approval
		// say so in sluice-vk's log, not on bare stderr
		ErrorLog:          slog.NewLogLogger(log.With("component", "kubelet-api").Handler(), slog.LevelWarn),
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	return &kubeletServer{srv: srv, log: log, streams: streams, certs: certs}, nil
}

// nodeEvent sends the node an Event, as the kubelet does (the node's
// name as its UID).
func nodeEvent(recorder record.EventRecorder, node string) func(eventType, reason, msg string) {
	ref := &corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: node, UID: types.UID(node)}
	return func(eventType, reason, msg string) { recorder.Event(ref, eventType, reason, msg) }
}

// serve serves on ln until ctx ends.
func (k *kubeletServer) serve(ctx context.Context, ln net.Listener) error {
	if k.certs != nil {
		cctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { k.certs.Run(cctx) })
		defer wg.Wait()
		defer cancel()
	}
	err := serveUntil(ctx, k.srv, func() error { return k.srv.ServeTLS(ln, "", "") })
	if k.streams.Conns != nil {
		k.streams.Conns.Close()
	}
	if err != nil {
		return fmt.Errorf("kubelet API: %w", err)
	}
	return nil
}

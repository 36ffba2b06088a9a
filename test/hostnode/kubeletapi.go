package hostnode

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
)

// kubeletServer is the node's kubelet API (logs and the pod list), as in
// sluice-vk: HTTPS on a self-signed certificate, clients authenticated by
// a certificate of the cluster's CA and authorised by SubjectAccessReview.
func kubeletServer(ctx context.Context, nodeName string, rc *rest.Config, client kubernetes.Interface, prov *provider, pods corev1listers.PodLister) (*http.Server, error) {
	cert, err := selfSignedCert(nodeName, time.Now())
	if err != nil {
		return nil, err
	}
	caPEM := rc.TLSClientConfig.CAData
	if len(caPEM) == 0 {
		if rc.TLSClientConfig.CAFile == "" {
			return nil, errors.New("kubelet API: the kubeconfig names no CA to check clients with")
		}
		if caPEM, err = os.ReadFile(rc.TLSClientConfig.CAFile); err != nil {
			return nil, fmt.Errorf("kubelet API client CA: %w", err)
		}
	}
	ca, err := dynamiccertificates.NewStaticCAContent("kubelet-client-ca", caPEM)
	if err != nil {
		return nil, fmt.Errorf("kubelet API client CA: %w", err)
	}
	auth, err := nodeutil.WebhookAuth(client, nodeName, func(c *nodeutil.WebhookAuthConfig) error {
		c.AuthnConfig.ClientCertificateCAContentProvider = ca
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("kubelet API auth: %w", err)
	}
	h := api.PodHandler(api.PodHandlerConfig{
		GetContainerLogs: prov.GetContainerLogs,
		GetPods:          prov.GetPods,
		GetPodsFromKubernetes: func(context.Context) ([]*corev1.Pod, error) {
			return pods.List(labels.Everything())
		},
	}, false)
	return &http.Server{
		Handler: nodeutil.WithAuth(auth, h),
		TLSConfig: &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{cert},
			ClientAuth:   tls.RequestClientCert, // the authenticator checks the chain
		},
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}, nil
}

// serveKubelet serves srv on ln until ctx ends.
func serveKubelet(ctx context.Context, srv *http.Server, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-errc:
		return fmt.Errorf("kubelet API: %w", err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close()
		}
		<-errc
		return nil
	}
}

// selfSignedCert is a P-256 certificate for the node's name and address,
// valid for a year.
func selfSignedCert(nodeName string, now time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet API certificate: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet API certificate: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: nodeName, Organization: []string{"sluice"}},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{nodeName},
		IPAddresses:  []net.IP{hostIP.AsSlice()},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet API certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

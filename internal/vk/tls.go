package vk

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"k8s.io/client-go/rest"
)

// servingCert is the kubelet API's certificate of Certificate file (the
// configured pair) or self-signed (one made now for the node's address).
func servingCert(c config.KubeletAPI, nodeName, ip string, now time.Time) (tls.Certificate, error) {
	if c.Certificate == config.CertificateFile {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("kubelet API certificate: %w", err)
		}
		return cert, nil
	}
	return selfSigned(nodeName, ip, now)
}

// selfSigned makes a P-256 certificate for the node's name and address,
// valid for a year.
func selfSigned(nodeName, ip string, now time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed certificate: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed certificate: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: nodeName, Organization: []string{"sluice"}},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{nodeName},
	}
	if a := net.ParseIP(ip); a != nil {
		tmpl.IPAddresses = []net.IP{a}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// clientCA is the PEM bundle of the CA that signs the API server's kubelet
// client certificate: the configured file, else the CA the virtual kubelet
// trusts for the API server.
func clientCA(c config.KubeletAPI, rc *rest.Config) ([]byte, error) {
	file := c.ClientCAFile
	if file == "" {
		if len(rc.TLSClientConfig.CAData) > 0 {
			return rc.TLSClientConfig.CAData, nil
		}
		file = rc.TLSClientConfig.CAFile
	}
	if file == "" {
		return nil, fmt.Errorf("kubelet API: no client CA: set Node.KubeletAPI.ClientCAFile (the kubeconfig names no CA)")
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("kubelet API client CA: %w", err)
	}
	return pem, nil
}

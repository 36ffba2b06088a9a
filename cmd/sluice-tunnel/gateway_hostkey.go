package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// The keys of the gateway's host key Secret and of its host keys
// ConfigMap: those of a kubernetes.io/ssh-auth Secret, and the one the
// shadows mount (Network.Gateway.HostKeys).
const (
	hostKeySecretKey = corev1.SSHAuthPrivateKey
	hostKeysMapKey   = "known_hosts"
)

// The label that marks the gateway's objects (the chart's), so that it
// never writes into a ConfigMap of that name it was not meant to.
const (
	labelComponent   = "app.kubernetes.io/component"
	componentGateway = "gateway"
)

// objectRef names a namespaced object, NS/NAME on the command line.
type objectRef struct{ ns, name string }

func (r objectRef) String() string {
	if r.name == "" {
		return ""
	}
	return r.ns + "/" + r.name
}

// Set parses NS/NAME: a namespace, and a name that is a DNS subdomain (a
// Secret's or a ConfigMap's).
func (r *objectRef) Set(v string) error {
	ns, name, ok := strings.Cut(v, "/")
	if !ok {
		return fmt.Errorf("%q: want NAMESPACE/NAME", v)
	}
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return fmt.Errorf("%q is not a namespace: %s", ns, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return fmt.Errorf("%q is not a name: %s", name, strings.Join(msgs, "; "))
	}
	r.ns, r.name = ns, name
	return nil
}

// ensureHostKey returns the gateway's host key kept in Secret ref, which
// must exist (the chart makes it empty, so that it goes with the release,
// and the gateway needs no right to create Secrets). The first replica to
// find it empty fills it with a new ed25519 key; replicas starting
// together race to update it, the API server takes one update (the
// others' resourceVersion is stale), and the losers read the winner's key:
// every replica presents the one key the shadows pin. A key already there
// is used as it is, made by the gateway or by an operator.
func ensureHostKey(ctx context.Context, client kubernetes.Interface, ref objectRef, log *slog.Logger) (ssh.Signer, error) {
	secrets := client.CoreV1().Secrets(ref.ns)
	for range 3 {
		s, err := secrets.Get(ctx, ref.name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("host key secret %s: %w", ref, err)
		}
		if pem := s.Data[hostKeySecretKey]; len(pem) > 0 {
			key, err := ssh.ParsePrivateKey(pem)
			if err != nil {
				return nil, fmt.Errorf("host key secret %s: key %s: %w", ref, hostKeySecretKey, err)
			}
			return key, nil
		}
		pem, err := newHostKey()
		if err != nil {
			return nil, err
		}
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data[hostKeySecretKey] = pem
		_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
		switch {
		case err == nil:
			log.Info("gateway host key made", "secret", ref.String())
			return ssh.ParsePrivateKey(pem)
		case !apierrors.IsConflict(err):
			return nil, fmt.Errorf("host key secret %s: %w", ref, err)
		}
		// Another replica filled it first: its key is the one.
	}
	return nil, fmt.Errorf("host key secret %s: changed by someone else at each attempt", ref)
}

// newHostKey is a new ed25519 private key, PEM-encoded in OpenSSH's format.
func newHostKey() ([]byte, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("make host key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "sluice gateway")
	if err != nil {
		return nil, fmt.Errorf("make host key: %w", err)
	}
	return pem.EncodeToMemory(block), nil
}

// errNotOurs is the error of an object not marked as the gateway's.
var errNotOurs = errors.New("not made by the gateway")

// publishHostKeys writes the public half of key into ConfigMap ref, as the
// known_hosts line of addr, the gateway's HOST:PORT as shadows dial it
// (Network.Gateway.Address): sluice-vk copies that ConfigMap into shadow
// namespaces, or the shadows of a confined node mount it. The ConfigMap
// must exist (the chart makes it, empty, where the shadows' credentials
// are read from) and be marked as the gateway's (label
// app.kubernetes.io/component=gateway): one that is not is left alone,
// and is an error.
func publishHostKeys(ctx context.Context, client kubernetes.Interface, ref objectRef, addr string, key ssh.PublicKey, log *slog.Logger) error {
	line := knownhosts.Line([]string{knownhosts.Normalize(addr)}, key) + "\n"
	maps := client.CoreV1().ConfigMaps(ref.ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := maps.Get(ctx, ref.name, metav1.GetOptions{})
		switch {
		case err != nil:
			return err
		case live.Labels[labelComponent] != componentGateway:
			return fmt.Errorf("%w (no label %s=%s)", errNotOurs, labelComponent, componentGateway)
		case live.Data[hostKeysMapKey] == line:
			return nil
		}
		if live.Data == nil {
			live.Data = map[string]string{}
		}
		live.Data[hostKeysMapKey] = line
		_, err = maps.Update(ctx, live, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("publish host keys in configmap %s: %w", ref, err)
	}
	log.Info("gateway host keys published", "configmap", ref.String(), "addr", addr,
		"host_key", ssh.FingerprintSHA256(key))
	return nil
}

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

// hostKeyLabels mark what the gateway writes, so that it never takes over
// an object of the same name that it did not make.
var hostKeyLabels = map[string]string{
	"app.kubernetes.io/managed-by": "sluice",
	"app.kubernetes.io/component":  "gateway",
}

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

// ensureHostKey returns the gateway's host key kept in Secret ref, making
// it when absent. Replicas starting together race to make it: the API
// server's create takes one, and the others read it, so that every replica
// presents the one key the shadows pin. The Secret is made immutable: the
// key changes only when an operator deletes it (and restarts the gateway).
// A Secret of that name the gateway did not make is used if it holds a
// key, never replaced.
func ensureHostKey(ctx context.Context, client kubernetes.Interface, ref objectRef, log *slog.Logger) (ssh.Signer, error) {
	secrets := client.CoreV1().Secrets(ref.ns)
	s, err := secrets.Get(ctx, ref.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		var made *corev1.Secret
		if made, err = newHostKeySecret(ref); err != nil {
			return nil, err
		}
		s, err = secrets.Create(ctx, made, metav1.CreateOptions{})
		switch {
		case err == nil:
			log.Info("gateway host key made", "secret", ref.String())
		case apierrors.IsAlreadyExists(err):
			// Another replica made it first: its key is the one.
			s, err = secrets.Get(ctx, ref.name, metav1.GetOptions{})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("host key secret %s: %w", ref, err)
	}
	key, err := ssh.ParsePrivateKey(s.Data[hostKeySecretKey])
	if err != nil {
		return nil, fmt.Errorf("host key secret %s: key %s: %w", ref, hostKeySecretKey, err)
	}
	return key, nil
}

// newHostKeySecret is a Secret ref holding a new ed25519 host key.
func newHostKeySecret(ref objectRef) (*corev1.Secret, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("make host key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "sluice gateway")
	if err != nil {
		return nil, fmt.Errorf("make host key: %w", err)
	}
	immutable := true
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: ref.name, Namespace: ref.ns, Labels: hostKeyLabels},
		Type:       corev1.SecretTypeSSHAuth,
		Immutable:  &immutable,
		Data:       map[string][]byte{hostKeySecretKey: pem.EncodeToMemory(block)},
	}, nil
}

// errNotOurs is the error of an object the gateway did not make.
var errNotOurs = errors.New("not made by the gateway")

// publishHostKeys writes the public half of key into ConfigMap ref, as the
// known_hosts line of addr, the gateway's HOST:PORT as shadows dial it
// (Network.Gateway.Address): sluice-vk copies that ConfigMap into shadow
// namespaces. It makes the ConfigMap, or updates one it made; one of that
// name it did not make is left alone, and is an error.
func publishHostKeys(ctx context.Context, client kubernetes.Interface, ref objectRef, addr string, key ssh.PublicKey, log *slog.Logger) error {
	line := knownhosts.Line([]string{knownhosts.Normalize(addr)}, key) + "\n"
	maps := client.CoreV1().ConfigMaps(ref.ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := maps.Get(ctx, ref.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = maps.Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: ref.name, Namespace: ref.ns, Labels: hostKeyLabels},
				Data:       map[string]string{hostKeysMapKey: line},
			}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				// Another replica made it meanwhile: judged again.
				return apierrors.NewConflict(corev1.Resource("configmaps"), ref.name, err)
			}
			return err
		case err != nil:
			return err
		case live.Labels["app.kubernetes.io/component"] != hostKeyLabels["app.kubernetes.io/component"]:
			return fmt.Errorf("%w (no label app.kubernetes.io/component=gateway)", errNotOurs)
		case live.Data[hostKeysMapKey] == line:
			return nil
		}
		live.Data = map[string]string{hostKeysMapKey: line}
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

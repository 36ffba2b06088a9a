package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluice-hpc/sluice/internal/sshx"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var quiet = slog.New(slog.DiscardHandler)

// TestEnsureHostKeyRace: two replicas starting together both find no
// Secret; one makes it, the other reads it, and both present the same
// key, which is ed25519, in an immutable ssh-auth Secret.
func TestEnsureHostKeyRace(t *testing.T) {
	c := fake.NewClientset()
	// Both replicas' first get finds nothing, as when they start at once.
	var gets atomic.Int32
	c.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		if gets.Add(1) <= 2 {
			return true, nil, apierrors.NewNotFound(corev1.Resource("secrets"), "gw-host-key")
		}
		return false, nil, nil
	})
	ref := objectRef{"sluice", "gw-host-key"}
	var keys [2]ssh.Signer
	var errs [2]error
	var started, wg sync.WaitGroup
	started.Add(2)
	for i := range keys {
		wg.Go(func() {
			started.Done()
			started.Wait()
			keys[i], errs[i] = ensureHostKey(context.Background(), c, ref, quiet)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
	}
	if !bytes.Equal(keys[0].PublicKey().Marshal(), keys[1].PublicKey().Marshal()) {
		t.Errorf("replicas present %s and %s; want one key", ssh.FingerprintSHA256(keys[0].PublicKey()), ssh.FingerprintSHA256(keys[1].PublicKey()))
	}
	if keys[0].PublicKey().Type() != ssh.KeyAlgoED25519 {
		t.Errorf("key type %s; want ed25519", keys[0].PublicKey().Type())
	}
	s, err := c.CoreV1().Secrets("sluice").Get(context.Background(), "gw-host-key", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Type != corev1.SecretTypeSSHAuth || s.Immutable == nil || !*s.Immutable || s.Labels["app.kubernetes.io/component"] != "gateway" {
		t.Errorf("secret type %s, immutable %v, labels %v", s.Type, s.Immutable, s.Labels)
	}
	// A restart (an upgrade) keeps the key.
	again, err := ensureHostKey(context.Background(), c, ref, quiet)
	if err != nil || !bytes.Equal(again.PublicKey().Marshal(), keys[0].PublicKey().Marshal()) {
		t.Errorf("after a restart: %v, %v; want the same key", again, err)
	}
}

// TestEnsureHostKeyExisting: a Secret an operator made with a key of
// their own is used as it is; one with no usable key is an error naming
// it, and is left as it was.
func TestEnsureHostKeyExisting(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	own, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	made, err := newHostKeySecret(objectRef{"sluice", "x"})
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	mine := made.DeepCopy()
	mine.Name, mine.Labels, mine.Type = "mine", nil, corev1.SecretTypeOpaque
	mine.Data = map[string][]byte{hostKeySecretKey: pem.EncodeToMemory(block)}
	garbage := mine.DeepCopy()
	garbage.Name, garbage.Data = "garbage", map[string][]byte{hostKeySecretKey: []byte("not a key")}
	c := fake.NewClientset(mine, garbage)

	got, err := ensureHostKey(context.Background(), c, objectRef{"sluice", "mine"}, quiet)
	if err != nil || !bytes.Equal(got.PublicKey().Marshal(), own.PublicKey().Marshal()) {
		t.Errorf("operator's Secret: %v; want its key", err)
	}
	_, err = ensureHostKey(context.Background(), c, objectRef{"sluice", "garbage"}, quiet)
	if err == nil || !strings.Contains(err.Error(), "host key secret sluice/garbage: key ssh-privatekey") {
		t.Errorf("garbage: %v; want an error naming the Secret and its key", err)
	}
	// The API server refusing is an error too, never a key made anyway.
	c.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("secrets"), "gw", errors.New("no"))
	})
	if _, err := ensureHostKey(context.Background(), c, objectRef{"sluice", "gw"}, quiet); !apierrors.IsForbidden(err) {
		t.Errorf("forbidden: %v", err)
	}
}

// TestPublishHostKeys: the ConfigMap holds the known_hosts line that the
// shadows' client (sshx.HostKeys) accepts for the advertised address and
// for no other; a new key replaces the line; a ConfigMap of that name the
// gateway did not make is refused and left as it was.
func TestPublishHostKeys(t *testing.T) {
	ctx := context.Background()
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "sluice", Name: "theirs"},
		Data: map[string]string{hostKeysMapKey: "x ssh-ed25519 AAAA"}}
	c := fake.NewClientset(theirs)
	ref := objectRef{"sluice", "gw-host-keys"}
	const addr = "gw.sluice.svc:2222"
	for range 2 {
		// each key, published twice: the second changes nothing
		key := newSigner(t)
		for range 2 {
			if err := publishHostKeys(ctx, c, ref, addr, key.PublicKey(), quiet); err != nil {
				t.Fatal(err)
			}
		}
		cm, err := c.CoreV1().ConfigMaps("sluice").Get(ctx, ref.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(cm.Data[hostKeysMapKey], "\n"); n != 1 {
			t.Errorf("known_hosts %q: %d lines; want one", cm.Data[hostKeysMapKey], n)
		}
		file := filepath.Join(t.TempDir(), "known_hosts")
		if err := os.WriteFile(file, []byte(cm.Data[hostKeysMapKey]), 0o600); err != nil {
			t.Fatal(err)
		}
		check, err := sshx.HostKeys(file)
		if err != nil {
			t.Fatal(err)
		}
		remote := &net.TCPAddr{IP: net.IPv4(10, 96, 0, 9), Port: 2222}
		if err := check(addr, remote, key.PublicKey()); err != nil {
			t.Errorf("the shadows' check of %s: %v", addr, err)
		}
		if err := check("gw.sluice.svc:22", remote, key.PublicKey()); err == nil {
			t.Error("the key is accepted for another port")
		}
		if err := check(addr, remote, newSigner(t).PublicKey()); err == nil {
			t.Error("another key is accepted")
		}
	}
	err := publishHostKeys(ctx, c, objectRef{"sluice", "theirs"}, addr, newSigner(t).PublicKey(), quiet)
	if !errors.Is(err, errNotOurs) {
		t.Errorf("a ConfigMap the gateway did not make: %v; want refused", err)
	}
	if cm, _ := c.CoreV1().ConfigMaps("sluice").Get(ctx, "theirs", metav1.GetOptions{}); cm.Data[hostKeysMapKey] != "x ssh-ed25519 AAAA" {
		t.Errorf("their ConfigMap changed: %q", cm.Data[hostKeysMapKey])
	}
}

func newSigner(t *testing.T) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

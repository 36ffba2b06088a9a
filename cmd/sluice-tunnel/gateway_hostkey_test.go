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

// emptySecret is the Secret the chart makes for the gateway's host key.
func emptySecret(name string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "sluice", Name: name,
		Labels: map[string]string{labelComponent: componentGateway}}}
}

// TestEnsureHostKeyRace: the first replica to find the Secret empty fills
// it with an ed25519 key, which a restart (an upgrade) keeps. A replica
// whose update loses the race (another filled it meanwhile: a conflict)
// reads and presents the winner's key, not its own.
func TestEnsureHostKeyRace(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(emptySecret("gw-host-key"))
	ref := objectRef{"sluice", "gw-host-key"}
	first, err := ensureHostKey(ctx, c, ref, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if first.PublicKey().Type() != ssh.KeyAlgoED25519 {
		t.Errorf("key type %s; want ed25519", first.PublicKey().Type())
	}
	again, err := ensureHostKey(ctx, c, ref, quiet)
	if err != nil || !bytes.Equal(again.PublicKey().Marshal(), first.PublicKey().Marshal()) {
		t.Errorf("after a restart: %v; want the same key", err)
	}

	// the race: the other replica's update lands between this one's get
	// and update
	c = fake.NewClientset(emptySecret("gw-host-key"))
	winnerPEM, winner := newKeyPEM(t)
	var updates int
	c.PrependReactor("update", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		updates++
		if updates > 1 {
			return false, nil, nil
		}
		won := emptySecret("gw-host-key")
		won.Data = map[string][]byte{hostKeySecretKey: winnerPEM}
		if err := c.Tracker().Update(corev1.SchemeGroupVersion.WithResource("secrets"), won, "sluice"); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewConflict(corev1.Resource("secrets"), "gw-host-key", errors.New("the object has been modified"))
	})
	got, err := ensureHostKey(ctx, c, ref, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.PublicKey().Marshal(), winner.PublicKey().Marshal()) {
		t.Errorf("after losing the race: %s; want the winner's %s", ssh.FingerprintSHA256(got.PublicKey()), ssh.FingerprintSHA256(winner.PublicKey()))
	}
	if updates != 1 {
		t.Errorf("%d updates; want the lost one only", updates)
	}
}

// TestEnsureHostKeyExisting: a key an operator put in the Secret is used
// as it is; one that is not a key is an error naming the Secret and left
// as it was; a Secret that does not exist or cannot be read is an error,
// never a key made anyway.
func TestEnsureHostKeyExisting(t *testing.T) {
	ctx := context.Background()
	ownPEM, own := newKeyPEM(t)
	mine := emptySecret("mine")
	mine.Data = map[string][]byte{hostKeySecretKey: ownPEM}
	garbage := emptySecret("garbage")
	garbage.Data = map[string][]byte{hostKeySecretKey: []byte("not a key")}
	c := fake.NewClientset(mine, garbage)

	got, err := ensureHostKey(ctx, c, objectRef{"sluice", "mine"}, quiet)
	if err != nil || !bytes.Equal(got.PublicKey().Marshal(), own.PublicKey().Marshal()) {
		t.Errorf("operator's key: %v; want it used", err)
	}
	_, err = ensureHostKey(ctx, c, objectRef{"sluice", "garbage"}, quiet)
	if err == nil || !strings.Contains(err.Error(), "host key secret sluice/garbage: key ssh-privatekey") {
		t.Errorf("garbage: %v; want an error naming the Secret and its key", err)
	}
	if s, _ := c.CoreV1().Secrets("sluice").Get(ctx, "garbage", metav1.GetOptions{}); string(s.Data[hostKeySecretKey]) != "not a key" {
		t.Errorf("garbage replaced: %q", s.Data[hostKeySecretKey])
	}
	if _, err := ensureHostKey(ctx, c, objectRef{"sluice", "absent"}, quiet); !apierrors.IsNotFound(err) {
		t.Errorf("absent: %v; want not found", err)
	}
	c.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("secrets"), "mine", errors.New("no"))
	})
	if _, err := ensureHostKey(ctx, c, objectRef{"sluice", "mine"}, quiet); !apierrors.IsForbidden(err) {
		t.Errorf("forbidden: %v", err)
	}
}

// TestPublishHostKeys: the ConfigMap holds the known_hosts line that the
// shadows' client (sshx.HostKeys) accepts for the advertised address and
// for no other; a new key replaces the line; a ConfigMap of that name not
// marked as the gateway's is refused and left as it was.
func TestPublishHostKeys(t *testing.T) {
	ctx := context.Background()
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "sluice", Name: "theirs"},
		Data: map[string]string{hostKeysMapKey: "x ssh-ed25519 AAAA"}}
	shell := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "sluice", Name: "gw-host-keys",
		Labels: map[string]string{labelComponent: componentGateway}}}
	c := fake.NewClientset(theirs, shell)
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
		t.Errorf("a ConfigMap not marked as the gateway's: %v; want refused", err)
	}
	if cm, _ := c.CoreV1().ConfigMaps("sluice").Get(ctx, "theirs", metav1.GetOptions{}); cm.Data[hostKeysMapKey] != "x ssh-ed25519 AAAA" {
		t.Errorf("their ConfigMap changed: %q", cm.Data[hostKeysMapKey])
	}
	if err := publishHostKeys(ctx, c, objectRef{"sluice", "absent"}, addr, newSigner(t).PublicKey(), quiet); !apierrors.IsNotFound(err) {
		t.Errorf("absent: %v; want not found", err)
	}
}

// newKeyPEM is a new ed25519 key, PEM-encoded without a comment, and its
// signer.
func newKeyPEM(t *testing.T) ([]byte, ssh.Signer) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block), s
}

// newSigner is a new ed25519 key.
func newSigner(t *testing.T) ssh.Signer {
	t.Helper()
	_, s := newKeyPEM(t)
	return s
}

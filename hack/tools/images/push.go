package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// pushRef is where the image named ref (ghcr.io/sluice-hpc/sluice-vk:TAG)
// goes under prefix (registry.example.org/sluice): prefix/sluice-vk:TAG.
func pushRef(prefix, ref string) (name.Reference, error) {
	r, err := name.ParseReference(strings.TrimSuffix(prefix, "/")+"/"+path.Base(ref), name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("push %s to %s: %w", ref, prefix, err)
	}
	return r, nil
}

// remoteOptions are the options of every push: the context, the
// credentials of the Docker config ($DOCKER_CONFIG/config.json, as `crane
// auth login` and `docker login` write it) and TLS verified against the
// system's CAs and o.pushCA.
func remoteOptions(ctx context.Context, o options) ([]remote.Option, error) {
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	if o.pushCA == "" {
		return opts, nil
	}
	pem, err := os.ReadFile(o.pushCA)
	if err != nil {
		return nil, fmt.Errorf("push: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("push: %s holds no PEM certificate", o.pushCA)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return append(opts, remote.WithTransport(t)), nil
}

// pushImage pushes img, named ref, under o.push.
func pushImage(ctx context.Context, o options, ref string, img v1.Image) error {
	return pushWith(ctx, o, ref, func(r name.Reference, opts ...remote.Option) error {
		return remote.Write(r, img, opts...)
	})
}

// pushIndex pushes idx, named ref, under o.push: the index and every
// platform's image.
func pushIndex(ctx context.Context, o options, ref string, idx v1.ImageIndex) error {
	return pushWith(ctx, o, ref, func(r name.Reference, opts ...remote.Option) error {
		return remote.WriteIndex(r, idx, opts...)
	})
}

// pushWith writes what is named ref to its place under o.push with write.
func pushWith(ctx context.Context, o options, ref string, write func(name.Reference, ...remote.Option) error) error {
	r, err := pushRef(o.push, ref)
	if err != nil {
		return err
	}
	opts, err := remoteOptions(ctx, o)
	if err != nil {
		return err
	}
	if err := write(r, opts...); err != nil {
		return fmt.Errorf("push %s: %w", r, err)
	}
	return nil
}

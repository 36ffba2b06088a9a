// Command registry is the rig's container registry: the OCI distribution
// API of go-containerregistry's pkg/registry, over TLS (a certificate of the
// rig's registry CA, which the rig's containerd and the tests' helm trust)
// with HTTP basic authentication for every request, blobs stored on disk.
// Manifests and tags live in memory: whoever needs an image pushes it
// after the registry starts (the e2e tests and the demo push once per run).
//
//	registry -listen 10.251.15.1:5443 -cert tls.crt -key tls.key -users users -dir blobs
//
// The users file holds "user:password" lines and must be 0600. It logs
// (slog, text) on stderr; SIGTERM stops it, letting requests finish.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "", "the address to serve on, HOST:PORT")
	cert := flag.String("cert", "", "the server's certificate (PEM)")
	key := flag.String("key", "", "the server's private key (PEM)")
	usersFile := flag.String("users", "", "the file of user:password lines (0600)")
	dir := flag.String("dir", "", "the directory blobs are stored in")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if *listen == "" || *cert == "" || *key == "" || *usersFile == "" || *dir == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, errUsage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *listen, *cert, *key, *usersFile, *dir, logger); err != nil {
		logger.Error("registry: stopped", "error", err)
		os.Exit(1)
	}
}

// run serves until ctx is done.
func run(ctx context.Context, addr, certFile, keyFile, usersFile, dir string, logger *slog.Logger) error {
	u, err := readUsers(usersFile)
	if err != nil {
		return err
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return fmt.Errorf("load certificate: %w", err)
	}
	h, err := newServer(u, dir, logger)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{
		Handler:           h,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	logger.Info("registry: serving", "addr", ln.Addr().String(), "users", len(u), "dir", dir)
	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/registry"
)

// users are the accounts the registry admits, from a file of "user:password"
// lines; the passwords are kept as their SHA-256, compared in constant time.
type users map[string][sha256.Size]byte

// readUsers reads file: one "user:password" a line, blank lines and lines
// starting with # left out. A file that is not private (group or other may
// read it) is refused: it holds the passwords in the clear.
func readUsers(file string) (users, error) {
	fi, err := os.Stat(file)
	if err != nil {
		return nil, fmt.Errorf("read users: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("read users: %s is mode %v; want 0600 or stricter", file, fi.Mode().Perm())
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read users: %w", err)
	}
	u := users{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, pass, ok := strings.Cut(line, ":")
		if !ok || name == "" || pass == "" {
			return nil, fmt.Errorf("read users: %s:%d: want user:password", file, n)
		}
		u[name] = sha256.Sum256([]byte(pass))
	}
	if len(u) == 0 {
		return nil, fmt.Errorf("read users: %s names no user", file)
	}
	return u, nil
}

// admits reports whether the request carries the password of a user.
func (u users) admits(r *http.Request) (string, bool) {
	name, pass, ok := r.BasicAuth()
	if !ok {
		return "", false
	}
	want, known := u[name]
	got := sha256.Sum256([]byte(pass))
	// compared whether or not the user is known, so that the time taken
	// does not tell
	match := subtle.ConstantTimeCompare(got[:], want[:]) == 1
	return name, known && match
}

// server is the registry behind basic authentication: every request,
// reads included, needs a user's password (a pod pulls with its
// imagePullSecrets).
type server struct {
	users users
	next  http.Handler
	log   *slog.Logger
}

// newServer serves the OCI distribution API of go-containerregistry's
// registry, blobs stored under blobDir (kept across restarts; manifests
// and tags are held in memory, so images are pushed again after a restart).
func newServer(u users, blobDir string, logger *slog.Logger) (*server, error) {
	if err := os.MkdirAll(blobDir, 0o700); err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	reg := registry.New(
		registry.WithBlobHandler(registry.NewDiskBlobHandler(blobDir)),
		registry.Logger(log.New(slogWriter{logger}, "", 0)),
	)
	return &server{users: u, next: reg, log: logger}, nil
}

const realm = `Basic realm="sluice-rig registry"`

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user, ok := s.users.admits(r)
	if !ok {
		if _, _, given := r.BasicAuth(); given {
			s.log.Warn("registry: refused", "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path)
		}
		w.Header().Set("WWW-Authenticate", realm)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintln(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
		return
	}
	s.log.Debug("registry: request", "user", user, "method", r.Method, "path", r.URL.Path)
	s.next.ServeHTTP(w, r)
}

// slogWriter takes the lines go-containerregistry's registry logs.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.log.Info("registry: " + strings.TrimSpace(string(p)))
	return len(p), nil
}

var errUsage = errors.New("usage: registry -listen HOST:PORT -cert FILE -key FILE -users FILE -dir DIR")

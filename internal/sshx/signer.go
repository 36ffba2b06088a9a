package sshx

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/crypto/ssh"
)

// Signer reads an unencrypted private key (OpenSSH, PKCS#1, PKCS#8 or SEC 1
// PEM) from file.
//
// Like OpenSSH, it refuses a key file owned by the calling user that group
// or others may access; a file owned by someone else (a Secret mounted by
// the kubelet, owned by root and shared through fsGroup) is not checked.
func Signer(file string) (ssh.Signer, error) {
	fi, err := os.Stat(file)
	if err != nil {
		return nil, fmt.Errorf("ssh key: %w", err)
	}
	if err := checkKeyMode(file, fi); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("ssh key: %w", err)
	}
	signer, err := ssh.ParsePrivateKey(data)
	var missing *ssh.PassphraseMissingError
	switch {
	case errors.As(err, &missing):
		return nil, fmt.Errorf("ssh key %s: the key is protected by a passphrase; an unencrypted key is needed", file)
	case err != nil:
		return nil, fmt.Errorf("ssh key %s: not a private key: %w", file, err)
	}
	return signer, nil
}

func checkKeyMode(file string, fi os.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("ssh key %s: not a regular file", file)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != os.Getuid() {
		return nil
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("ssh key %s: permissions %04o are too open: group and others must have no access (chmod 600)", file, perm)
	}
	return nil
}

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
	return readSigner(file, ownerOnly)
}

// PodSigner is Signer for a key mounted from a Secret into a container that
// does not run as root: Kubernetes shares the file with it through its
// group (fsGroup; mode 0440), so the group may read the file. It refuses a
// key file owned by the calling user that others may access or the group
// may write. The file is root-owned on a kubelet, and so not checked; a
// node that writes volumes as the container's own user (a rootless or test
// node) leaves it owned by the caller, mode 0440, which Signer would refuse.
func PodSigner(file string) (ssh.Signer, error) {
	return readSigner(file, groupReads)
}

// keyRule is the access a key file owned by the calling user may give:
// denied are the mode bits it must not have, want says what is expected.
type keyRule struct {
	denied os.FileMode
	want   string
}

var (
	ownerOnly  = keyRule{0o077, "group and others must have no access (chmod 600)"}
	groupReads = keyRule{0o027, "others must have no access and the group may only read (chmod 640)"}
)

// readSigner reads the key of file, refusing a file owned by the calling
// user whose mode breaks rule.
func readSigner(file string, rule keyRule) (ssh.Signer, error) {
	fi, err := os.Stat(file)
	if err != nil {
		return nil, fmt.Errorf("ssh key: %w", err)
	}
	if err := checkKeyMode(file, fi, rule); err != nil {
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

func checkKeyMode(file string, fi os.FileInfo, rule keyRule) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("ssh key %s: not a regular file", file)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != os.Getuid() {
		return nil
	}
	if perm := fi.Mode().Perm(); perm&rule.denied != 0 {
		return fmt.Errorf("ssh key %s: permissions %04o are too open: %s", file, perm, rule.want)
	}
	return nil
}

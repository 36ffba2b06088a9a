package shadow

import (
	"net"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/internal/hostname"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Bastion is an SSH host before the login node (Network.SSH.Bastion): the
// tunnels reach the login node through it, its host key pinned from the
// ConfigMap HostKeys.
type Bastion struct {
	// Host and Port are the bastion's sshd; no bastion if Host is empty.
	Host string
	Port int
	// User is the account on the bastion; if empty, Spec.User.
	User string
	// HostKeys names the ConfigMap (key known_hosts) that pins the
	// bastion's host key. Required with a Host.
	HostKeys string
	// KeySecret names the Secret (key ssh-privatekey) with the key for the
	// bastion; if empty, the login node's key (Spec.KeySecret).
	KeySecret string
}

// TunnelsKey is the key of the node ConfigMap that holds the number of
// tunnels of the virtual node, as SetNode last counted them: a tunnel
// spreads its reconnections over a window that grows with it.
const TunnelsKey = "tunnels"

// Where the tunnel containers find the bastion's files.
const (
	mountBastionHosts = "/etc/sluice/bastion-hosts"
	mountBastionSSH   = "/etc/sluice/bastion-ssh"
	volBastionHosts   = "bastion-hosts"
	volBastionSSH     = "bastion-key"
)

// accessArgs are the tunnels' flags for the bastion and for spreading
// their reconnections (pacingArgs).
func (s Spec) accessArgs() []string {
	var args []string
	if b := s.Bastion; b.Host != "" {
		args = append(args,
			"--bastion="+net.JoinHostPort(b.Host, strconv.Itoa(b.Port)),
			"--bastion-known-hosts="+path.Join(mountBastionHosts, keyKnownHosts))
		if b.User != "" {
			args = append(args, "--bastion-user="+b.User)
		}
		if b.KeySecret != "" {
			args = append(args, "--bastion-key="+path.Join(mountBastionSSH, keyPrivate))
		}
	}
	return append(args, s.pacingArgs()...)
}

// pacingArgs are the tunnels' flags for spreading their reconnections.
func (s Spec) pacingArgs() []string {
	var args []string
	if s.ReconnectSpread > 0 {
		args = append(args,
			"--reconnect-spread="+s.ReconnectSpread.String(),
			"--tunnels-file="+path.Join(mountNode, TunnelsKey))
		if s.ReconnectWindowMax > 0 {
			args = append(args, "--reconnect-window-max="+s.ReconnectWindowMax.String())
		}
	}
	return args
}

// accessMounts are the mounts of the bastion's files in a tunnel container.
func (s Spec) accessMounts() []corev1.VolumeMount {
	if s.Bastion.Host == "" {
		return nil
	}
	m := []corev1.VolumeMount{{Name: volBastionHosts, MountPath: mountBastionHosts, ReadOnly: true}}
	if s.Bastion.KeySecret != "" {
		m = append(m, corev1.VolumeMount{Name: volBastionSSH, MountPath: mountBastionSSH, ReadOnly: true})
	}
	return m
}

// accessVolumes are the volumes of the bastion's files.
func (s Spec) accessVolumes() []corev1.Volume {
	b := s.Bastion
	if b.Host == "" {
		return nil
	}
	v := []corev1.Volume{{Name: volBastionHosts, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: b.HostKeys},
		Items:                []corev1.KeyToPath{{Key: keyKnownHosts, Path: keyKnownHosts}},
	}}}}
	if b.KeySecret != "" {
		mode := keyMode
		v = append(v, corev1.Volume{Name: volBastionSSH, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  b.KeySecret,
			Items:       []corev1.KeyToPath{{Key: keyPrivate, Path: keyPrivate}},
			DefaultMode: &mode,
		}}})
	}
	return v
}

// validateAccess checks the bastion and the reconnection spread.
func (s Spec) validateAccess(bad func(field, format string, args ...any)) {
	if b := s.Bastion; b.Host != "" {
		if err := hostname.CheckHost(b.Host); err != nil {
			bad("Bastion.Host", "%v", err)
		}
		if b.Port < 1 || b.Port > 65535 {
			bad("Bastion.Port", "must be 1-65535, got %d", b.Port)
		}
		if strings.ContainsAny(b.User, " \t\n=\"'$`\\") {
			bad("Bastion.User", "%q is not a user name", b.User)
		}
		if msgs := validation.IsDNS1123Subdomain(b.HostKeys); len(msgs) > 0 {
			bad("Bastion.HostKeys", "%q: %s", b.HostKeys, strings.Join(msgs, "; "))
		}
		if b.KeySecret != "" {
			if msgs := validation.IsDNS1123Subdomain(b.KeySecret); len(msgs) > 0 {
				bad("Bastion.KeySecret", "%q: %s", b.KeySecret, strings.Join(msgs, "; "))
			}
		}
	} else if s.Bastion != (Bastion{}) {
		bad("Bastion.Host", "is required when the bastion is set")
	}
	if s.ReconnectSpread < 0 || s.ReconnectWindowMax < 0 {
		bad("ReconnectSpread", "durations must not be negative")
	}
	if s.ReconnectWindowMax > 0 && s.ReconnectWindowMax < time.Second {
		bad("ReconnectWindowMax", "must be at least 1s, got %s", s.ReconnectWindowMax)
	}
}

// countTunnels records that pod has a shadow and returns how many the
// Manager knows of, its own included.
func (m *Manager) countTunnels(pod *corev1.Pod) int {
	m.tunnelsMu.Lock()
	defer m.tunnelsMu.Unlock()
	if m.tunnels == nil {
		m.tunnels = map[types.UID]bool{}
	}
	m.tunnels[pod.UID] = true
	return len(m.tunnels)
}

// forgetTunnels forgets pod's shadow.
func (m *Manager) forgetTunnels(pod *corev1.Pod) {
	m.tunnelsMu.Lock()
	defer m.tunnelsMu.Unlock()
	delete(m.tunnels, pod.UID)
}

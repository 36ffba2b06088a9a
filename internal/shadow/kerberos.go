package shadow

import (
	"net"
	"path"
	"strconv"
	"strings"

	"github.com/sluice-hpc/sluice/internal/hostname"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Kerberos makes the tunnels log in with gssapi-with-mic from a keytab
// (Network.SSH.Auth kerberos) instead of the key Secret, on the login and
// node hops; a bastion keeps its own key (Bastion.KeySecret). The realm
// and its KDCs are given as flags: the shadows have no krb5.conf.
type Kerberos struct {
	// Principal is user or user@REALM; no Kerberos if empty.
	Principal string
	// KeytabSecret names the Secret holding the principal's keytab (key
	// keytab), read in the shadow's namespace like the key Secret.
	KeytabSecret string
	// Realm and KDCs (host or host:port) are the realm and its KDCs, as
	// the shadow pods reach them.
	Realm string
	KDCs  []string
}

// keytabKey is the key of the keytab in KeytabSecret.
const keytabKey = "keytab"

// Where the tunnel containers find the keytab.
const (
	mountKeytab = "/etc/sluice/krb5"
	volKeytab   = "krb5-keytab"
)

// on says whether the tunnels log in with Kerberos.
func (k Kerberos) on() bool { return k.Principal != "" }

// loginArgs are the tunnels' flags that log in to the site: the key (and
// its certificate) or, with Kerberos, the keytab, principal, realm and
// KDCs.
func (s Spec) loginArgs() []string {
	k := s.Kerberos
	if !k.on() {
		args := []string{"--key=" + path.Join(mountSSH, keyPrivate)}
		if s.KeySecretCertificate {
			args = append(args, "--certificate="+path.Join(mountSSH, keyCert))
		}
		return args
	}
	return []string{
		"--keytab=" + path.Join(mountKeytab, keytabKey),
		"--principal=" + k.Principal,
		"--realm=" + k.Realm,
		"--kdc=" + strings.Join(k.KDCs, ","),
	}
}

// loginMount is the mount of the key's or the keytab's Secret.
func (s Spec) loginMount() corev1.VolumeMount {
	if s.Kerberos.on() {
		return corev1.VolumeMount{Name: volKeytab, MountPath: mountKeytab, ReadOnly: true}
	}
	return corev1.VolumeMount{Name: volSSH, MountPath: mountSSH, ReadOnly: true}
}

// loginVolume is the volume of the key Secret (and its certificate, with
// KeySecretCertificate) or, with Kerberos, of the keytab Secret; mounted
// whole, not by subPath, so that the kubelet updates a renewed certificate
// or keytab in place. The tunnel reads them through the pod's fsGroup.
func (s Spec) loginVolume() corev1.Volume {
	mode := keyMode
	if s.Kerberos.on() {
		return corev1.Volume{Name: volKeytab, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  s.Kerberos.KeytabSecret,
			Items:       []corev1.KeyToPath{{Key: keytabKey, Path: keytabKey}},
			DefaultMode: &mode,
		}}}
	}
	items := []corev1.KeyToPath{{Key: keyPrivate, Path: keyPrivate}}
	if s.KeySecretCertificate {
		items = append(items, corev1.KeyToPath{Key: keyCert, Path: keyCert})
	}
	return corev1.Volume{Name: volSSH, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName:  s.KeySecret,
		Items:       items,
		DefaultMode: &mode,
	}}}
}

// loginSecret names the Secret the tunnels log in with: KeySecret, or
// KeytabSecret with Kerberos.
func (s Spec) loginSecret() string {
	if s.Kerberos.on() {
		return s.Kerberos.KeytabSecret
	}
	return s.KeySecret
}

// validateLogin checks the key Secret or, with Kerberos, its fields; and
// that a bastion has a key of its own when there is no login key to share.
func (s Spec) validateLogin(bad func(field, format string, args ...any)) {
	subdomain := func(field, v string) {
		if msgs := validation.IsDNS1123Subdomain(v); len(msgs) > 0 {
			bad(field, "%q: %s", v, strings.Join(msgs, "; "))
		}
	}
	k := s.Kerberos
	if !k.on() {
		if k.KeytabSecret != "" || k.Realm != "" || len(k.KDCs) > 0 {
			bad("Kerberos.Principal", "is required when any other Kerberos field is set")
		}
		subdomain("KeySecret", s.KeySecret)
		return
	}
	if strings.ContainsAny(k.Principal, " \t\n=,\"'$`\\") {
		bad("Kerberos.Principal", "%q is not a principal", k.Principal)
	}
	subdomain("Kerberos.KeytabSecret", k.KeytabSecret)
	if k.Realm == "" || strings.ContainsAny(k.Realm, " \t\n=,\"'$`\\/@") {
		bad("Kerberos.Realm", "%q is not a realm", k.Realm)
	}
	if len(k.KDCs) == 0 {
		bad("Kerberos.KDCs", "at least one KDC is needed")
	}
	for _, kdc := range k.KDCs {
		if !isHostPort(kdc) {
			bad("Kerberos.KDCs", "%q is not host or host:port", kdc)
		}
	}
	if s.KeySecretCertificate {
		bad("KeySecretCertificate", "a certificate goes with a key, not with Kerberos")
	}
	if s.KeyFile != "" {
		bad("KeyFile", "no key Secret is published with Kerberos")
	}
	if s.Bastion.Host != "" && s.Bastion.KeySecret == "" {
		bad("Bastion.KeySecret", "is required with Kerberos: the bastion is logged into with a key, and the tunnels have no login key to share")
	}
}

// isHostPort says whether s is host or host:port.
func isHostPort(s string) bool {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return hostname.CheckHost(s) == nil
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535 && hostname.CheckHost(host) == nil
}

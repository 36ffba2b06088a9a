package shadow

import (
	"path"
	"strconv"
	"strings"

	"github.com/sluice-hpc/sluice/internal/annotations"
	corev1 "k8s.io/api/core/v1"
)

// podIPEnv is the variable every tunnel container gets its pod's IP in; the
// kubelet expands $(POD_IP) in the arguments.
const podIPEnv = "POD_IP"

// commonArgs are the flags both tunnel commands start with: how to reach
// the login node and, through it, the compute node named in the node file.
func (s Spec) commonArgs() []string {
	if s.gatewayOn() {
		return s.gatewayArgs()
	}
	args := append([]string{
		"--login=" + s.loginAddr(),
		"--user=" + s.User,
	}, s.loginArgs()...)
	args = append(args,
		"--login-known-hosts="+path.Join(mountLoginHosts, keyKnownHosts),
		"--node-known-hosts="+path.Join(mountNodeHosts, keyKnownHosts),
		"--node-file="+path.Join(mountNode, NodeKey),
	)
	return append(args, s.accessArgs()...)
}

// forwardArgs are the arguments of `sluice-tunnel forward` for the ports
// the job exposes. A job with a relay (relayed: RunsRelay) serves the
// relay's forward entry, which the tunnel goes through, to the job user's
// listeners only, with ForwardTarget node; the socket directory is read
// from the node ConfigMap, as for the reverse tunnel.
func (s Spec) forwardArgs(ports []int32, metrics int32, relayed bool) []string {
	list := make([]string, len(ports))
	for i, p := range ports {
		list[i] = strconv.Itoa(int(p))
	}
	args := append([]string{"forward"}, s.commonArgs()...)
	args = append(args,
		"--target="+s.ForwardTarget,
		"--ports="+strings.Join(list, ","),
		"--listen=$("+podIPEnv+")",
	)
	if relayed && s.ForwardTarget == "node" && !s.gatewayOn() {
		// Through the gateway the shadow asks for 127.0.0.1:PORT and the
		// gateway itself goes through the relay's forward entry.
		args = append(args, "--entry-dir-file="+path.Join(mountNode, SocketDirKey))
	}
	return append(args, "--metrics="+metricsAddr(metrics))
}

// reverseArgs are the arguments of `sluice-tunnel reverse` for the pod's
// reverse tunnel: its forwards, whose Dial is already qualified for the
// shadow's namespace, and its SOCKS port. The socket directory is read from
// the node ConfigMap (SetNode), not given here: its name is secret from
// whoever reads the shadow's spec.
func (s Spec) reverseArgs(rev *annotations.Reverse, metrics int32) []string {
	args := append([]string{"reverse"}, s.commonArgs()...)
	args = append(args, "--socket-dir-file="+path.Join(mountNode, SocketDirKey))
	for _, f := range rev.Forwards {
		args = append(args, "--forward="+strconv.Itoa(f.ListenPort)+"="+f.Dial)
	}
	if rev.SocksPort != 0 {
		args = append(args, "--socks-port="+strconv.Itoa(rev.SocksPort))
	}
	if s.ReverseSshd == "userspace" {
		args = append(args, "--sshd=userspace")
	}
	if s.ReverseNodeExec == "srun" {
		args = append(args, "--node-exec=srun", "--job-file="+path.Join(mountNode, JobKey))
	}
	return append(args, "--metrics="+metricsAddr(metrics))
}

func metricsAddr(port int32) string {
	return "$(" + podIPEnv + "):" + strconv.Itoa(int(port))
}

// tunnelContainer is a tunnel container running the image with args, with
// the credentials and the node file mounted, POD_IP set and its liveness
// probed on metrics, the port of its metrics server.
func (s Spec) tunnelContainer(name string, args []string, ports []corev1.ContainerPort, metrics int32) corev1.Container {
	return corev1.Container{
		Name:  name,
		Image: s.TunnelImage,
		Args:  args,
		Ports: ports,
		Env: []corev1.EnvVar{{
			Name: podIPEnv,
			ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
				APIVersion: "v1",
				FieldPath:  "status.podIP",
			}},
		}},
		VolumeMounts:    s.tunnelMounts(),
		SecurityContext: tunnelSecurity(),
		LivenessProbe:   livenessProbe(metrics),
		Resources:       tunnelResources(),
	}
}

// tunnelMounts are the mounts of a tunnel container: the credentials (or,
// with the gateway, the token and the gateway's host keys) and the node
// file.
func (s Spec) tunnelMounts() []corev1.VolumeMount {
	if s.gatewayOn() {
		return gatewayMounts()
	}
	return append([]corev1.VolumeMount{
		s.loginMount(),
		{Name: volLoginHosts, MountPath: mountLoginHosts, ReadOnly: true},
		{Name: volNodeHosts, MountPath: mountNodeHosts, ReadOnly: true},
		{Name: volNode, MountPath: mountNode, ReadOnly: true},
	}, s.accessMounts()...)
}

// holdContainer keeps running a shadow that has nothing else to run once
// its kept init containers are done.
func (s Spec) holdContainer() corev1.Container {
	return corev1.Container{
		Name:            ContainerHold,
		Image:           s.TunnelImage,
		Args:            []string{"hold"},
		SecurityContext: tunnelSecurity(),
		Resources:       holdResources(),
	}
}

// tunnelVolumes are the volumes of the tunnel containers: the key or the
// keytab (loginVolume), both known_hosts and the node ConfigMap of the
// shadow name; with the gateway, gatewayVolumes.
func (s Spec) tunnelVolumes(name string) []corev1.Volume {
	if s.gatewayOn() {
		return s.gatewayVolumes(name)
	}
	return append([]corev1.Volume{
		s.loginVolume(),
		{Name: volLoginHosts, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: s.LoginHostKeys},
			Items:                []corev1.KeyToPath{{Key: keyKnownHosts, Path: keyKnownHosts}},
		}}},
		{Name: volNodeHosts, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: s.NodeHostKeys},
			Items:                []corev1.KeyToPath{{Key: keyKnownHosts, Path: keyKnownHosts}},
		}}},
		{Name: volNode, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: NodeConfigMap(name)},
		}}},
	}, s.accessVolumes()...)
}

package shadow

import (
	corev1 "k8s.io/api/core/v1"
)

// TunnelUID is the user and group the tunnel image runs as (and the
// shadow's fsGroup, so that this user can read the key).
const TunnelUID int64 = 65532

// keyMode is the mode of the key file in its Secret volume: owner and group
// may read it. The kubelet makes the file root-owned with the pod's fsGroup
// as its group (it adds the group read bit to a read-only volume's files in
// any case, so 0400 would end up 0440 too); the tunnel, not root, reads it
// through its membership in the fsGroup, which every container of the pod
// holds. sluice-tunnel accepts a group-readable key (sshx.PodSigner).
const keyMode int32 = 0o440

// tunnelSecurity is the security context of the tunnel and hold
// containers: the restricted Pod Security Standard and a read-only root
// filesystem (sluice-tunnel writes no file). It sets the user, group and
// seccomp profile itself rather than leave them to the pod, since the pod
// level is the user's when the shadow runs kept containers (podSecurity).
func tunnelSecurity() *corev1.SecurityContext {
	yes, no, uid := true, false, TunnelUID
	gid := uid
	return &corev1.SecurityContext{
		RunAsNonRoot:             &yes,
		RunAsUser:                &uid,
		RunAsGroup:               &gid,
		AllowPrivilegeEscalation: &no,
		ReadOnlyRootFilesystem:   &yes,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// podSecurity is the shadow pod's security context.
//
// A shadow running only sluice's containers (tunnels, hold) gets the
// restricted one: non-root user and group TunnelUID, fsGroup TunnelUID (the
// key's group), seccomp RuntimeDefault.
//
// A shadow running kept containers (or kept init containers) gets the
// user's pod's one instead, all of it, so that those run as they would have
// in the user's pod: a pod-level runAsUser of ours would replace the
// image's user of a kept container that names none, and a pod-level
// runAsNonRoot of ours would refuse one whose image runs as root. A kept
// container's own settings win over the pod's, as ever; so do the tunnel
// containers' (tunnelSecurity), which name everything themselves. The
// settings that exist per pod only (supplementalGroups, sysctls, fsGroup
// and their policies) thus stay the user's too; fsGroup is TunnelUID when
// the user set none. With the user's fsGroup G the key's group is G, and
// the tunnels read it as members of G: the kubelet adds the fsGroup to
// every container's groups. Whether such a shadow passes the restricted
// standard depends on the kept containers, as it would for the user's pod.
func podSecurity(pod *corev1.Pod, kept *carried) *corev1.PodSecurityContext {
	uid := TunnelUID
	if len(kept.init) == 0 && len(kept.containers) == 0 {
		yes, gid, fsGroup := true, uid, uid
		return &corev1.PodSecurityContext{
			RunAsNonRoot:   &yes,
			RunAsUser:      &uid,
			RunAsGroup:     &gid,
			FSGroup:        &fsGroup,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}
	}
	sc := &corev1.PodSecurityContext{}
	if pod.Spec.SecurityContext != nil {
		sc = pod.Spec.SecurityContext.DeepCopy()
	}
	if sc.FSGroup == nil {
		sc.FSGroup = &uid
	}
	return sc
}

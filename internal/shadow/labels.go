package shadow

// Labels on every shadow object (the shadow contract). Selecting on
// LabelManagedBy and LabelNode finds the shadows of one virtual node.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelShadow    = "sluice.io/shadow"
	LabelPodUID    = "sluice.io/pod-uid"
	LabelNode      = "sluice.io/node"

	// ManagedBy is the value of LabelManagedBy.
	ManagedBy = "sluice"
)

// Annotations on shadow objects.
const (
	// AnnotationPod is the offloaded pod, namespace/name, in full (the
	// shadow's name may be shortened).
	AnnotationPod = "sluice.io/pod"
	// AnnotationCopyOf marks a credential replicated into the shadow
	// namespace: the namespace/name of its original.
	AnnotationCopyOf = "sluice.io/copy-of"
	// annotationSpecHash holds the hash of what Ensure last wrote, so that
	// an unchanged shadow is not rewritten.
	annotationSpecHash = "sluice.io/spec-hash"
	// annotationNodeOfJob, on a shadow's pods, is what SetNode last wrote
	// to the node ConfigMap, JOB@NODE: changing it makes the kubelet sync
	// the pod, and with it the mounted ConfigMap, at once.
	annotationNodeOfJob = "sluice.io/node-of-job"
)

// labelCopy marks credential copies (with LabelManagedBy), so that they can
// be listed; they carry no LabelNode, since the shadows of several nodes
// share them.
const labelCopy = "sluice.io/copy"

// CopySelector selects the credential copies made in shadow namespaces
// (their AnnotationCopyOf names the original, NAMESPACE/NAME).
const CopySelector = LabelManagedBy + "=" + ManagedBy + "," + labelCopy + "=true"

// The Deployment's containers.
const (
	ContainerForward = "ssh-forward"
	ContainerReverse = "ssh-reverse"
	// ContainerHold keeps a shadow running that has kept init containers
	// and nothing else: `sluice-tunnel hold` waits for its end.
	ContainerHold = "hold"
)

// NodeKey is the key of the node ConfigMap that holds the compute node's
// name ("" until it is known).
const NodeKey = "node"

// JobKey is the key of the node ConfigMap that holds the job's Slurm id
// ("" until it is known), for the srun carrier (Reverse.NodeExec srun).
const JobKey = "job"

// SocketDirKey is the key of the node ConfigMap that holds the pod's socket
// directory on the node, "" until the job is submitted. Its name comes from
// the pod's salt, which sluice-vk keeps in the job directory: it is not
// derived from anything the shadow's own spec shows.
const SocketDirKey = "socket-dir"

// Where the tunnel containers find their files.
const (
	mountSSH        = "/etc/sluice/ssh"
	mountLoginHosts = "/etc/sluice/login-hosts"
	mountNodeHosts  = "/etc/sluice/node-hosts"
	mountNode       = "/etc/sluice/node"

	keyPrivate    = "ssh-privatekey"
	keyCert       = "ssh-certificate"
	keyKnownHosts = "known_hosts"

	volSSH        = "ssh-key"
	volLoginHosts = "login-hosts"
	volNodeHosts  = "node-hosts"
	volNode       = "node"
)

// First metrics ports of the tunnel containers; each moves up while it
// collides with a port the shadow pod exposes.
const (
	metricsForward = 9464
	metricsReverse = 9465
)

// objectLabels are the labels of every object of the shadow name of pod uid
// on node.
func objectLabels(name, uid, node string) map[string]string {
	return map[string]string{
		LabelManagedBy: ManagedBy,
		LabelShadow:    name,
		LabelPodUID:    uid,
		LabelNode:      node,
	}
}

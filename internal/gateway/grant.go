// Package gateway holds the site's SSH connections for every tunnel of a
// virtual node and carries each shadow's tunnels over them (SPEC S14).
//
// A shadow holds no site credential: it proves which offloaded pod it
// serves with its pod-bound ServiceAccount token, and the gateway lets it
// carry that pod's tunnels and nothing else. What a shadow may carry is a
// Grant, made from sluice's own records, never from fields a tenant writes.
package gateway

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/types"
)

// ErrRefused is wrapped by every error an Authenticator returns for a
// token it does not accept, as opposed to one it could not judge (the API
// server unreachable), which a shadow may retry.
var ErrRefused = errors.New("refused")

// An Authenticator turns a shadow's token into what it may carry.
type Authenticator interface {
	// Authenticate returns the grant of the shadow whose token this is,
	// or an error wrapping ErrRefused when the token does not prove one.
	Authenticate(ctx context.Context, token string) (*Grant, error)
}

// Grant is what one shadow may carry: the tunnels of one offloaded pod,
// to the node its job runs on.
type Grant struct {
	// Pod is the offloaded pod the shadow serves.
	Pod PodRef
	// Shadow is the shadow pod the token was bound to.
	Shadow PodRef

	// Job is the pod's Slurm job ID; Node its batch host. Node is empty
	// while the job has none: the shadow may connect but carries nothing.
	Job  string
	Node string
	// SocketDir is the pod's socket directory on the node (absolute).
	SocketDir string
	// NodeConfigMap is the shadow's node ConfigMap that Job, Node and
	// SocketDir were read from, where sluice-vk records a requeue or a
	// move (Server.PlacementChanged); zero when the grant was not made
	// from one.
	NodeConfigMap types.NamespacedName

	// ForwardPorts are the container ports the pod exposes.
	ForwardPorts []int32
	// SocketNames are the names, in SocketDir, of the remote forwards
	// the shadow may ask for (rev-<port>.sock, the SOCKS proxy's).
	SocketNames []string
	// SocksPort is the port of the pod's SOCKS proxy, 0 for none; its
	// socket is the SocketNames' rev-<SocksPort>.sock.
	SocksPort int32
	// Relayed is true when the pod's job runs a relay
	// (shadow.RunsRelay): its ports are reached through the relay's
	// forward entry in SocketDir, which passes a connection only to a
	// listener of the job's user, never to another user's on the node.
	Relayed bool
}

// PodRef names a pod.
type PodRef struct {
	Namespace string
	Name      string
	UID       types.UID
}

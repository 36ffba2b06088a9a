package chart

import ()

// This file reads, from the Go source of sluice-vk (every package of this
// module that cmd/sluice-vk links), which requests it can make to the API
// server: the methods of client-go's typed clients it calls, the typed
// clients it hands to a library (described in handoffs) and those it turns
// into an interface of its own (each method of that interface counts). The
// chart's RBAC is compared with that in rbac_test.go.

const module = "github.com/sluice-hpc/sluice"

// right is one verb on one resource (with its subresource, "pods/status").
type right struct{ Group, Resource, Verb string }

func (r right) String() string {
	g := r.Group
	if g == "" {
		g = "core"
	}
	return r.Verb + " " + g + "/" + r.Resource
}

// scope is where a request goes.
type scope struct {
	kind scopeKind
	// ns is the namespace of a fixedNamespace scope; releaseNamespace
	// stands for the release's.
	ns string
}

type scopeKind int

const (
	// anyNamespace is a namespace chosen at run time: a pod's, its
	// shadow's, the tenant namespace on a confined node.
	anyNamespace scopeKind = iota
	// clusterWide is a cluster-scoped resource, or every namespace at
	// once.
	clusterWide
	// fixedNamespace is one namespace known in advance.
	fixedNamespace
)

const releaseNamespace = "{release}"

// credentialsNamespace stands for sluice-vk's --namespace (see
// credentialsNamespaceFields).
const credentialsNamespace = "{credentials}"

func (s scope) String() string {
	switch s.kind {
	case clusterWide:
		return "cluster-wide"
	case fixedNamespace:
		return "in namespace " + s.ns
	}
	return "in a pod's namespace"
}

// use is one request sluice-vk can make, and where the source asks for it.
type use struct {
	right
	scope scope
	fn    string // the function making it (types.Func.FullName)
	pos   string
}

// handoff is what a library does with a typed client sluice-vk hands it.
type handoff struct {
	rights []right
	scope  scope
}

// handoffs are the libraries' calls, read from their source at the
// versions of go.mod, keyed by the function (or struct field) a typed
// client is handed to, or by "CALLER FUNCTION" where what the library asks
// depends on the caller. A hand-off missing here fails the test: read the
// library and add what it calls.
var handoffs = map[string][]handoff{
	// the gateway's informer of the node ConfigMaps (label selector of
	// the node), cluster-wide or in the tenant namespace
	"(*" + module + "/internal/gateway.PlacementWatcher).Run k8s.io/client-go/informers.NewSharedInformerFactoryWithOptions": {
		{rights: verbs("", "configmaps", "list", "watch"), scope: scope{kind: anyNamespace}},
	},
	// the pod informer of the node (field selector spec.nodeName); the
	// factory of ConfigMaps, Secrets and Services is made but never
	// started (vk/run.go)
	"k8s.io/client-go/informers.NewSharedInformerFactoryWithOptions": {
		{rights: verbs("", "pods", "list", "watch"), scope: scope{kind: clusterWide}},
	},
	// node.PodController: UpdateStatus of every pod bound to the node
	// (foreign pods refused on a confined node too), Delete of a pod once
	// the provider let it go (pods of the tenant namespace only on a
	// confined node: a refused pod is Failed, and the API server deletes
	// a Failed pod at once)
	"github.com/virtual-kubelet/virtual-kubelet/node.PodControllerConfig.PodClient": {
		{rights: verbs("", "pods/status", "update"), scope: scope{kind: clusterWide}},
		{rights: verbs("", "pods", "delete"), scope: scope{kind: anyNamespace}},
	},
	// node.NodeController: Get and Patch of the status, Create when missing
	"github.com/virtual-kubelet/virtual-kubelet/node.NewNodeController": {
		{rights: append(verbs("", "nodes", "get", "create"), verbs("", "nodes/status", "patch")...), scope: scope{kind: clusterWide}},
	},
	// the lease controller: Get, Create, Update of the node's Lease
	"github.com/virtual-kubelet/virtual-kubelet/node.WithNodeEnableLeaseV1": {
		{rights: verbs("coordination.k8s.io", "leases", "get", "create", "update"), scope: scope{kind: fixedNamespace, ns: "kube-node-lease"}},
	},
	// returns client.CoordinationV1().Leases("kube-node-lease"): no request
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil.NodeLeaseV1Client": nil,
	// the kubelet API's authentication and authorisation
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil.WebhookAuth": {
		{rights: append(verbs("authentication.k8s.io", "tokenreviews", "create"), verbs("authorization.k8s.io", "subjectaccessreviews", "create")...), scope: scope{kind: clusterWide}},
	},
	// the event broadcaster's sink: Create, and Patch of a repeated
	// Event, in the namespace of the object (foreign pods too)
	"k8s.io/client-go/kubernetes/typed/core/v1.EventSinkImpl.Interface": {
		{rights: verbs("", "events", "create", "patch"), scope: scope{kind: clusterWide}},
	},
	// the kubelet API's serving certificate: Create of a
	// CertificateSigningRequest (Get only for a named one that exists:
	// sluice-vk names none), then List and Watch of it by name until it is
	// issued
	"k8s.io/client-go/util/certificate/csr.RequestCertificateWithContext": {
		{rights: verbs("certificates.k8s.io", "certificatesigningrequests", "create"), scope: scope{kind: clusterWide}},
	},
	"k8s.io/client-go/util/certificate/csr.WaitForCertificate": {
		{rights: verbs("certificates.k8s.io", "certificatesigningrequests", "list", "watch"), scope: scope{kind: clusterWide}},
	},
	// leader election: Get, Create, Update of the Lease
	// sluice-vk-<NodeName> in the release's namespace
	"k8s.io/client-go/tools/leaderelection/resourcelock.LeaseLock.Client": {
		{rights: verbs("coordination.k8s.io", "leases", "get", "create", "update"), scope: scope{kind: fixedNamespace, ns: releaseNamespace}},
	},
}

func verbs(group, resource string, vs ...string) []right {
	var rs []right
	for _, v := range vs {
		rs = append(rs, right{group, resource, v})
	}
	return rs
}

// methodVerbs maps a typed client's methods to the verb they ask for and
// the subresource they act on.
var methodVerbs = map[string]struct{ verb, sub string }{
	"Get": {"get", ""}, "List": {"list", ""}, "Watch": {"watch", ""},
	"Create": {"create", ""}, "Update": {"update", ""}, "Delete": {"delete", ""},
	"DeleteCollection": {"deletecollection", ""}, "Patch": {"patch", ""}, "Apply": {"patch", ""},
	"UpdateStatus": {"update", "status"}, "ApplyStatus": {"patch", "status"},
	"GetLogs": {"get", "log"}, "Bind": {"create", "binding"},
	"Evict": {"create", "eviction"}, "EvictV1": {"create", "eviction"}, "EvictV1beta1": {"create", "eviction"},
	"UpdateEphemeralContainers": {"update", "ephemeralcontainers"}, "UpdateResize": {"update", "resize"},
	"GetScale": {"get", "scale"}, "UpdateScale": {"update", "scale"}, "ApplyScale": {"patch", "scale"},
	"ProxyGet":                 {"get", "proxy"},
	"CreateToken":              {"create", "token"},
	"CreateWithEventNamespace": {"create", ""}, "UpdateWithEventNamespace": {"update", ""},
	"PatchWithEventNamespace": {"patch", ""}, "Search": {"list", ""},
}

package annotations

import (
	"slices"
	"strings"
)

// Prefixes are the annotation prefixes of interLink's virtual kubelet and of
// its Slurm plugin, the legacy one included. sluice never ignores an
// annotation under them silently: one it does not implement, or writes
// under the legacy prefix, gets a Warning Event (Warnings).
var Prefixes = []string{JobPrefix, "interlink.eu/", "interlink.virtual-kubelet.io/", LegacyJobPrefix}

// Support is what sluice does with an annotation of interLink's.
type Support string

// The kinds of support.
const (
	// Same: interLink's meaning.
	Same Support = "same"
	// Mapped: interLink's meaning, with sluice's rules (validated, refused
	// with the reason where interLink would pass it on).
	Mapped Support = "mapped"
	// Sluice: sluice's own annotation, under interLink's prefix.
	Sluice Support = "sluice"
	// Warned: not implemented; the pod runs without it and a Warning Event
	// says what sluice does instead.
	Warned Support = "warned"
)

// Known is an annotation sluice knows, and what it does with it.
type Known struct {
	Name    string
	Support Support
	// Note says what sluice does. For a Warned annotation it is the
	// Warning Event's message, after the annotation's name.
	Note string
}

// EventNotImplemented is the reason of the Warning Event of an annotation
// sluice does not implement.
const EventNotImplemented = "AnnotationNotImplemented"

// unknownNote is the Warning of an annotation under Prefixes that is not in
// the table.
const unknownNote = "sluice does not know this annotation; it has no effect here"

// notYet is the start of the note of what sluice will implement (issue 14).
const notYet = "not implemented yet: "

// known is the table of interLink's annotations, by name. docs/
// interlink-migration.md gives each its row (TestMigrationPageNamesEvery
// Annotation).
var known = []Known{
	{Flags, Mapped, "sbatch options, split as interLink splits them (spaces or lines, -p gpu, --time 10, quotes); each becomes its own #SBATCH line in long form; a job name is dropped with a Warning Event (the job is named after the pod UID), the other options sluice sets itself are refused with the reason"},
	{PreExec, Same, "runs in the job's shell before the containers; what it exports reaches them"},
	{MPIFlags, Mapped, "each container runs under mpiexec -np $SLURM_NTASKS with these flags, split as a shell would and each quoted; \"true\" runs them without mpiexec, as in interLink"},
	{SingularityOptions, Mapped, "apptainer exec/run options after the site's (Site.SingularityDefaultOptions); unknown options, network namespaces, added privileges and binds over /etc/hosts are refused with the reason"},
	{SingularityMounts, Mapped, "apptainer binds (--bind src[:dst[:ro|rw]],…) of clean absolute paths; a bind over /etc/hosts is refused: the reverse tunnel binds its hosts file there"},
	{EnrootOptions, Mapped, "enroot start options after the site's (Site.EnrootDefaultOptions); unknown options, --conf and --rc (sluice sets the command), and mounts over /etc/hosts are refused with the reason; under another runtime a Warning Event says the containers run without them"},
	{EnrootMounts, Mapped, "enroot mounts (--mount src:dst[:none[:bind,ro,…]]) of clean absolute paths; a mount over /etc/hosts is refused: the reverse tunnel binds its hosts file there; under another runtime a Warning Event says the containers run without them"},
	{ImageRoot, Same, "put before the pod's image names instead of the site's Site.ImagePrefix, unless a name is an absolute path or starts with it"},
	{Flavor, Same, "the site flavor (Site.Flavors) whose sbatch options, CPU and memory defaults the job gets; one the site lacks gives a Warning Event FlavorNotFound, and the flavor is chosen by the pod's GPUs or is the default"},
	{"slurm-job.vk.io/nfs-mode", Warned, nfsNote},
	{"slurm-job.vk.io/nfs-mount-options", Warned, nfsNote},
	{"slurm-job.vk.io/nfs-fusemount-type", Warned, nfsNote},
	{"slurm-job.vk.io/nfs-helper-fusemount-type", Warned, nfsNote},
	{"slurm-job.vk.io/nfs-fuse-command", Warned, nfsNote + "; sluice never runs commands from annotations other than " + PreExec},
	{"slurm-job.vk.io/nfs-helper-command", Warned, nfsNote + "; sluice never runs commands from annotations other than " + PreExec},
	{"slurm-job.vk.io/nfs-bridge-path", Warned, nfsNote},
	{"slurm-job.vk.io/nfs-bridge-pvc", Warned, nfsNote},

	{PodVPN, Same, "any non-empty value disables the shadow"},
	{DisableOffloadContainers, Same, "the containers it lists run in the shadow, in the cluster"},
	{DisableOffloadInitContainers, Same, "the init containers it lists run in the shadow, in the cluster"},
	{ReverseForwards, Sluice, "cluster endpoints the job reaches through the reverse tunnel"},
	{ReverseBind, Sluice, "the loopback address of the job's relay"},
	{ReverseSocksPort, Sluice, "a SOCKS5 proxy on the node for the job, where the site allows it"},
	{RetiredReverseOwnerOnly, Warned, "retired, it has no effect: the relay forwards the job user's connections only, always"},
	{RetiredReverseNodeExec, Warned, "retired, it has no effect: the site chooses how the tunnel reaches the node (Network.SSH.Reverse.NodeExec)"},
	{ShadowSameNS, Mapped, "\"true\" makes the shadow in the pod's own namespace instead of <namespace>-shadow; refused on a node confined to another namespace (Network.TenantNamespace), and where the site's SSH credentials would be copied into the pod's namespace (Network.SSH.ReplicateCredentials)"},
	{"interlink.eu/pod-ip", Warned, "not implemented: the pod's IP is the node's InternalIP and POD_IP is not exported; set it from the downward API (status.podIP) if the containers need it"},
	{"interlink.eu/pod-subnet", Warned, "not implemented: sluice has no full-mesh network; the shadow forwards the containers' ports"},
	{"interlink.eu/wstunnel-extra-ports", Warned, notYet + "the shadow forwards the ports the containers declare only; declare the port in the container's ports"},
	{"interlink.eu/wstunnel-path-prefix", Warned, "not used: sluice's shadow has no wstunnel"},
	{"interlink.eu/wstunnel-client-commands", Warned, "ignored: sluice never runs commands from annotations other than " + PreExec + "; its tunnels are the shadow's SSH sessions"},
	{"interlink.eu/rathole-client-commands", Warned, "ignored: sluice never runs commands from annotations other than " + PreExec + "; its tunnels are the shadow's SSH sessions"},
	{"interlink.eu/wireguard-client-snippet", Warned, wgNote},
	{"interlink.eu/wg-private-key", Warned, wgNote + "; a private key does not belong in an annotation"},
	{"interlink.eu/wg-peer-public-key", Warned, wgNote},
	{"interlink.eu/wg-mtu", Warned, wgNote},
	{"interlink.eu/wg-keepalive-seconds", Warned, wgNote},
	{"interlink.virtual-kubelet.io/wstunnel-timeout", Warned, "not used: sluice's shadow has no wstunnel, and no such timeout"},
}

const (
	nfsNote = "not implemented: sluice mounts no NFS persistent volume (a pod with a persistentVolumeClaim volume is refused)"
	wgNote  = "not implemented: sluice has no WireGuard mesh; its tunnels are the shadow's SSH sessions"
)

// Table returns a copy of the table of interLink's annotations, by name.
func Table() []Known {
	t := slices.Clone(known)
	slices.SortFunc(t, func(a, b Known) int { return strings.Compare(a.Name, b.Name) })
	return t
}

// Lookup returns the table's entry of an annotation.
func Lookup(name string) (Known, bool) {
	i := slices.IndexFunc(known, func(k Known) bool { return k.Name == name })
	if i < 0 {
		return Known{}, false
	}
	return known[i], true
}

// Warning is the Warning Event of one annotation a pod sets that sluice
// does not implement, or writes under the legacy prefix.
type Warning struct {
	Annotation string
	// Reason is the Event's: EventLegacyPrefix or EventNotImplemented.
	Reason string
	// Message names the annotation and says what sluice does instead.
	Message string
}

// Warnings returns a Warning for every annotation of the pod under
// LegacyJobPrefix (Legacy.Message), then for every annotation, as Current
// reads them, that sluice does not implement, by name: a Warned one with
// its note, one the table does not know saying it has no effect.
func Warnings(a map[string]string) []Warning {
	cur, legacy := Current(a)
	out := make([]Warning, 0, len(legacy))
	for _, l := range legacy {
		out = append(out, Warning{Annotation: l.Key, Reason: EventLegacyPrefix, Message: l.Message()})
	}
	var unimplemented []Warning
	for name := range cur {
		if !Prefixed(name) {
			continue
		}
		note := unknownNote
		if k, ok := Lookup(name); ok {
			if k.Support != Warned {
				continue
			}
			note = k.Note
		}
		unimplemented = append(unimplemented, Warning{Annotation: name, Reason: EventNotImplemented, Message: truncate(name) + ": " + note})
	}
	slices.SortFunc(unimplemented, func(a, b Warning) int { return strings.Compare(a.Annotation, b.Annotation) })
	if len(out)+len(unimplemented) == 0 {
		return nil
	}
	return append(out, unimplemented...)
}

// Prefixed tells whether annotation name is under one of Prefixes: one
// that shapes a pod's job or its shadow, or that sluice warns of.
func Prefixed(name string) bool {
	return slices.ContainsFunc(Prefixes, func(p string) bool { return strings.HasPrefix(name, p) })
}

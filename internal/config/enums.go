package config

import "slices"

// enums are the values each key that takes one of a few words may hold.
// Validate checks them here and the chart's values schema lists them
// (Schema), so that the two cannot disagree.
var enums = map[string][]string{
	"Site.Access":                          {string(AccessSSH), string(AccessLocal)},
	"Site.ContainerRuntime":                {"apptainer", "singularity", "charliecloud", "enroot", "none"},
	"Network.ShadowMode":                   {"ssh", "none"},
	"Network.ShadowTolerations[].Operator": {"", "Equal", "Exists"}, // "": Equal
	"Network.ShadowTolerations[].Effect":   {"", "NoSchedule", "PreferNoSchedule", "NoExecute"},
	"Network.SSH.Auth":                     {"publickey", "kerberos"},
	"Network.SSH.ForwardTarget":            {"node", "login"},
	"Network.SSH.Reverse.Sshd":             {"node", "userspace"},
	"Network.SSH.Reverse.NodeExec":         {"ssh", "srun"},
	"Node.KubeletAPI.Certificate":          {string(CertificateCSR), string(CertificateFile), string(CertificateSelfSigned)},
	"Node.GPUResource":                     {"", GPUResourceNVIDIA, GPUResourceAMD},
	"Node.Taints[].Effect":                 {"NoSchedule", "PreferNoSchedule", "NoExecute"},
}

// Enum returns the values the key path (as Key.Path names it) may take, or
// nil when it may take others.
func Enum(path string) []string {
	return slices.Clone(enums[path])
}

// allowed reports whether v is one of the values of the enum path.
func allowed(path, v string) bool {
	return slices.Contains(enums[path], v)
}

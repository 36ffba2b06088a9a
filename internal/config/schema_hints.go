package config

// schemaHints are what the chart's values schema checks of a key beyond its
// type and enum, by Key.Path ("" is the file itself, "X[]" a list's items,
// "X.<name>" a map's values): limits Helm can refuse at install, before
// Validate would at start-up. Validate stays the judge; a hint only refuses
// earlier what Validate refuses too.
var schemaHints = map[string]schema{
	"": {
		Description: "sluice-vk's configuration file (SPEC S9), the same keys",
		Required:    []string{"NodeName", "Site", "Network"},
	},
	"NodeName":      {MinLength: intp(1), MaxLength: intp(63), Pattern: `^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`},
	"Site":          {Required: []string{"DataRoot"}},
	"Site.DataRoot": {MinLength: intp(1), Pattern: `^/`},
	"Site.JobComment": {
		MaxLength:   intp(256),
		Pattern:     `^([A-Za-z0-9._/@+=:-]|\{namespace\}|\{name\})*$`,
		Description: "the jobs' sbatch --comment, with {namespace} and {name}; empty for none (squeue shows it to every site user)",
	},
	"Site.Flavors.<name>.CPUDefault":              {Minimum: floatp(0)},
	"Site.Flavors.<name>.UID":                     {Minimum: floatp(0)},
	"Network.TenantNamespace":                     {MaxLength: intp(63), Pattern: `^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$`},
	"Network.TrustedShadowNamespaces[]":           {MaxLength: intp(63), Pattern: `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`},
	"Network.ShadowImagePullSecrets[]":            {MinLength: intp(1)},
	"Network.Gateway.HostKeys":                    {MaxLength: intp(253), Pattern: `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$`},
	"Network.SSH":                                 {Required: []string{"LoginHost", "User"}},
	"Network.SSH.LoginHost":                       {MinLength: intp(1)},
	"Network.SSH.Port":                            {Minimum: floatp(1), Maximum: floatp(65535)},
	"Network.SSH.User":                            {MinLength: intp(1)},
	"Network.SSH.Bastion.Port":                    {Minimum: floatp(1), Maximum: floatp(65535)},
	"Network.SSH.Pacing.Rate":                     {ExclusiveMinimum: floatp(0)},
	"Network.SSH.Pacing.Burst":                    {Minimum: floatp(1)},
	"Node.CPU":                                    {Description: quantity},
	"Node.Memory":                                 {Description: quantity},
	"Node.Pods":                                   {Description: quantity},
	"Node.GPUs":                                   {Description: quantity},
	"Node.Partitions":                             {Description: "the Slurm partitions whose nodes make the node's capacity; empty: the site's default partition"},
	"Node.Partitions[]":                           {Pattern: `^[A-Za-z0-9_.-]{1,64}$`},
	"Node.CapacityInterval":                       {Description: "how often the capacity is read from the site, a Go duration such as 5m"},
	"Node.ExtendedResources":                      {Description: "GRES names of the site to extended resource names (shard: example.com/shard)"},
	"Node.KubeletAPI.MaxSessionsPerPod":           {Minimum: floatp(0)},
	"Node.KubeletAPI.MaxSessionsPerNode":          {Minimum: floatp(0)},
	"Node.KubeletAPI.MaxLogFollowersPerNamespace": {Minimum: floatp(0)},
	"Node.KubeletAPI.MaxLogFollowersPerNode":      {Minimum: floatp(0)},
}

// quantityTypes: a quantity may be written as a number (64).
var quantityTypes = []string{"string", "integer"}

const quantity = "a Kubernetes quantity such as 64, 500m or 256Gi; empty: read from the site (Pods: 1000)"

func intp(n int) *int           { return &n }
func floatp(f float64) *float64 { return &f }

package site

// kubeArchs are the Kubernetes (GOARCH) names of uname -m's machine names.
var kubeArchs = map[string]string{
	"x86_64": "amd64", "amd64": "amd64",
	"aarch64": "arm64", "arm64": "arm64",
	"ppc64le":     "ppc64le",
	"s390x":       "s390x",
	"riscv64":     "riscv64",
	"loongarch64": "loong64",
	"i386":        "386", "i486": "386", "i586": "386", "i686": "386",
	"armv6l": "arm", "armv7l": "arm",
}

// KubeArch is the architecture Kubernetes names the machine uname -m tells
// (x86_64 is amd64, aarch64 arm64), "" for a machine it has no name for.
func KubeArch(machine string) string { return kubeArchs[machine] }

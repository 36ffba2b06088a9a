// Package relaybin finds the sluice-relay binary that fits a site: the one
// built for the machine its uname -m names. sluice-vk's image carries one
// relay per released architecture (Archs), named by File, beside sluice-vk.
package relaybin

import (
	"debug/elf"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sluice-hpc/sluice/internal/site"
)

// Archs are the site architectures (GOARCH names) a release carries a relay
// for.
var Archs = []string{"amd64", "arm64", "ppc64le"}

// Plain is the name of a relay without its architecture in the name, as
// `go build ./cmd/sluice-relay` leaves it beside sluice-vk: used only when
// it was built for the site's machine.
const Plain = "sluice-relay"

// File is the name of the relay for GOARCH arch in sluice-vk's image.
func File(arch string) string { return Plain + "-linux-" + arch }

// ErrNoFit is the error of Find when no relay fits the site's machine.
var ErrNoFit = errors.New("no sluice-relay fits the site")

// Find returns the path of the relay for a site whose uname -m is machine.
// With explicit set (sluice-vk --relay-binary), that file, which must be
// built for the machine; else File(arch) in dir, else Plain in dir if it is
// built for the machine. A relay for another machine is never returned:
// the job would fail at its start with an exec format error.
func Find(explicit, dir, machine string) (string, error) {
	arch := site.KubeArch(machine)
	if arch == "" {
		return "", fmt.Errorf("%w: its machine %q (uname -m) is not one sluice knows", ErrNoFit, machine)
	}
	if explicit != "" {
		got, err := Arch(explicit)
		if err != nil {
			return "", err
		}
		if got != arch {
			return "", fmt.Errorf("%w: %s is built for %s; the site's machine is %s (%s)", ErrNoFit, explicit, got, machine, arch)
		}
		return explicit, nil
	}
	// A file that is not a relay for arch, whatever its name, does not
	// fit: the message below lists what dir carries.
	for _, name := range []string{File(arch), Plain} {
		p := filepath.Join(dir, name)
		if got, err := Arch(p); err == nil && got == arch {
			return p, nil
		}
	}
	have := Carried(dir)
	if len(have) == 0 {
		return "", fmt.Errorf("%w: its machine is %s (%s) and %s holds no sluice-relay", ErrNoFit, machine, arch, dir)
	}
	return "", fmt.Errorf("%w: its machine is %s (%s); this sluice-vk carries relays for %s only",
		ErrNoFit, machine, arch, strings.Join(have, ", "))
}

// Carried lists the architectures of the relays in dir, sorted.
func Carried(dir string) []string {
	var have []string
	names, _ := filepath.Glob(filepath.Join(dir, Plain+"*"))
	for _, p := range names {
		if a, err := Arch(p); err == nil && !slices.Contains(have, a) {
			have = append(have, a)
		}
	}
	slices.Sort(have)
	return have
}

// Arch returns the GOARCH name of the machine the ELF file path is built
// for.
func Arch(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("relay binary: %w", err)
	}
	defer f.Close()
	a := elfArch(f.FileHeader)
	if a == "" {
		return "", fmt.Errorf("relay binary %s: built for %s (%s), not a machine sluice knows", path, f.Machine, f.Class)
	}
	return a, nil
}

// elfArch names the machine of an ELF header as GOARCH does; "" for others.
func elfArch(h elf.FileHeader) string {
	le := h.Data == elf.ELFDATA2LSB
	is64 := h.Class == elf.ELFCLASS64
	switch {
	case h.Machine == elf.EM_X86_64 && is64:
		return "amd64"
	case h.Machine == elf.EM_AARCH64 && is64:
		return "arm64"
	case h.Machine == elf.EM_PPC64 && is64 && le:
		return "ppc64le"
	case h.Machine == elf.EM_S390 && is64:
		return "s390x"
	case h.Machine == elf.EM_RISCV && is64:
		return "riscv64"
	case h.Machine == elf.EM_LOONGARCH && is64:
		return "loong64"
	case h.Machine == elf.EM_386 && !is64:
		return "386"
	case h.Machine == elf.EM_ARM && !is64:
		return "arm"
	}
	return ""
}

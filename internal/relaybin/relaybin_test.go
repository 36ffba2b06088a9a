package relaybin

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeELF writes an ELF header of machine m (64-bit little-endian unless
// told) to path: all Find reads of a binary.
func writeELF(t *testing.T, path string, m elf.Machine, class elf.Class, data elf.Data) {
	t.Helper()
	var order binary.ByteOrder = binary.LittleEndian
	if data == elf.ELFDATA2MSB {
		order = binary.BigEndian
	}
	ident := [elf.EI_NIDENT]byte{0x7f, 'E', 'L', 'F', byte(class), byte(data), byte(elf.EV_CURRENT)}
	var b bytes.Buffer
	var err error
	if class == elf.ELFCLASS32 {
		err = binary.Write(&b, order, elf.Header32{Ident: ident, Type: uint16(elf.ET_EXEC), Machine: uint16(m),
			Version: uint32(elf.EV_CURRENT), Ehsize: 52})
	} else {
		err = binary.Write(&b, order, elf.Header64{Ident: ident, Type: uint16(elf.ET_EXEC), Machine: uint16(m),
			Version: uint32(elf.EV_CURRENT), Ehsize: 64})
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
}

// release lays out the relays of a release in a new directory.
func release(t *testing.T) string {
	dir := t.TempDir()
	writeELF(t, filepath.Join(dir, File("amd64")), elf.EM_X86_64, elf.ELFCLASS64, elf.ELFDATA2LSB)
	writeELF(t, filepath.Join(dir, File("arm64")), elf.EM_AARCH64, elf.ELFCLASS64, elf.ELFDATA2LSB)
	writeELF(t, filepath.Join(dir, File("ppc64le")), elf.EM_PPC64, elf.ELFCLASS64, elf.ELFDATA2LSB)
	return dir
}

func TestFindByMachine(t *testing.T) {
	dir := release(t)
	for machine, want := range map[string]string{"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64", "ppc64le": "ppc64le"} {
		got, err := Find("", dir, machine)
		if err != nil || got != filepath.Join(dir, File(want)) {
			t.Errorf("Find(%q) = %q, %v; want %s", machine, got, err, File(want))
		}
	}
}

func TestFindRefuses(t *testing.T) {
	dir := release(t)
	for machine, want := range map[string]string{
		"s390x":   "its machine is s390x (s390x); this sluice-vk carries relays for amd64, arm64, ppc64le only",
		"ppc64":   `its machine "ppc64" (uname -m) is not one sluice knows`,
		"":        `its machine "" (uname -m) is not one sluice knows`,
		"x86_64 ": `its machine "x86_64 " (uname -m) is not one sluice knows`,
	} {
		got, err := Find("", dir, machine)
		if !errors.Is(err, ErrNoFit) || !strings.Contains(err.Error(), want) {
			t.Errorf("Find(%q) = %q, %v; want ErrNoFit saying %q", machine, got, err, want)
		}
	}
	if _, err := Find("", t.TempDir(), "x86_64"); !errors.Is(err, ErrNoFit) || !strings.Contains(err.Error(), "holds no sluice-relay") {
		t.Errorf("an empty directory: got %v; want ErrNoFit saying it holds no relay", err)
	}
}

// TestFindNoMislabelled checks that a relay is taken by what it is built
// for, not by its name: a big-endian ppc64 file named for ppc64le, or an
// arm64 file named for amd64, is not placed.
func TestFindNoMislabelled(t *testing.T) {
	dir := t.TempDir()
	writeELF(t, filepath.Join(dir, File("ppc64le")), elf.EM_PPC64, elf.ELFCLASS64, elf.ELFDATA2MSB)
	writeELF(t, filepath.Join(dir, File("amd64")), elf.EM_AARCH64, elf.ELFCLASS64, elf.ELFDATA2LSB)
	for _, machine := range []string{"ppc64le", "x86_64"} {
		if got, err := Find("", dir, machine); !errors.Is(err, ErrNoFit) {
			t.Errorf("Find(%q) = %q, %v; want ErrNoFit", machine, got, err)
		}
	}
}

func TestFindPlain(t *testing.T) {
	dir := t.TempDir()
	writeELF(t, filepath.Join(dir, Plain), elf.EM_X86_64, elf.ELFCLASS64, elf.ELFDATA2LSB)
	if got, err := Find("", dir, "x86_64"); err != nil || got != filepath.Join(dir, Plain) {
		t.Errorf("Find = %q, %v; want %s", got, err, Plain)
	}
	if got, err := Find("", dir, "aarch64"); !errors.Is(err, ErrNoFit) || !strings.Contains(err.Error(), "carries relays for amd64 only") {
		t.Errorf("Find(aarch64) = %q, %v; want ErrNoFit naming amd64", got, err)
	}
}

func TestFindExplicit(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "relay")
	writeELF(t, p, elf.EM_AARCH64, elf.ELFCLASS64, elf.ELFDATA2LSB)
	if got, err := Find(p, "/nonexistent", "aarch64"); err != nil || got != p {
		t.Errorf("Find = %q, %v; want %s", got, err, p)
	}
	if _, err := Find(p, release(t), "x86_64"); !errors.Is(err, ErrNoFit) || !strings.Contains(err.Error(), "is built for arm64") {
		t.Errorf("an arm64 --relay-binary for x86_64: got %v; want ErrNoFit, never another relay", err)
	}
	text := filepath.Join(dir, "script")
	if err := os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Find(text, "", "x86_64"); err == nil || errors.Is(err, ErrNoFit) {
		t.Errorf("a script as --relay-binary: got %v; want an ELF error", err)
	}
	if _, err := Find(filepath.Join(dir, "missing"), "", "x86_64"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing --relay-binary: got %v; want not exist", err)
	}
}

func TestElfArch(t *testing.T) {
	for _, c := range []struct {
		m     elf.Machine
		class elf.Class
		data  elf.Data
		want  string
	}{
		{elf.EM_X86_64, elf.ELFCLASS64, elf.ELFDATA2LSB, "amd64"},
		{elf.EM_386, elf.ELFCLASS32, elf.ELFDATA2LSB, "386"},
		{elf.EM_ARM, elf.ELFCLASS32, elf.ELFDATA2LSB, "arm"},
		{elf.EM_S390, elf.ELFCLASS64, elf.ELFDATA2MSB, "s390x"},
		{elf.EM_RISCV, elf.ELFCLASS64, elf.ELFDATA2LSB, "riscv64"},
		{elf.EM_PPC64, elf.ELFCLASS64, elf.ELFDATA2MSB, ""},
		{elf.EM_MIPS, elf.ELFCLASS32, elf.ELFDATA2MSB, ""},
	} {
		p := filepath.Join(t.TempDir(), "bin")
		writeELF(t, p, c.m, c.class, c.data)
		got, err := Arch(p)
		if got != c.want || (c.want == "") != (err != nil) {
			t.Errorf("%v %v %v: got %q, %v; want %q", c.m, c.class, c.data, got, err, c.want)
		}
	}
}

// TestFindOwnBuild checks the relay of this machine's own build of sluice:
// the test binary stands in for it.
func TestFindOwnBuild(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a, err := Arch(exe)
	if err != nil {
		t.Fatalf("Arch(the test binary): %v", err)
	}
	dir := t.TempDir()
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, File(a)), data, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := Carried(dir); len(got) != 1 || got[0] != a {
		t.Errorf("Carried = %q; want [%s]", got, a)
	}
}

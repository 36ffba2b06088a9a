package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCgroupMemoryLimit(t *testing.T) {
	write := func(t *testing.T, file, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		cgroup string
		files  map[string]string
		want   int64
	}{
		{"v2", "0::/kubepods/pod1/c1\n", map[string]string{"kubepods/pod1/c1/memory.max": "268435456\n"}, 256 << 20},
		{"v2 unlimited", "0::/x\n", map[string]string{"x/memory.max": "max\n"}, 0},
		{"v2 own namespace", "0::/\n", map[string]string{"memory.max": "134217728\n"}, 128 << 20},
		{"v2 path not visible", "0::/kubepods/pod1/c1\n", map[string]string{"memory.max": "134217728\n"}, 128 << 20},
		{"v1", "12:cpu,cpuacct:/a\n9:memory:/kubepods/pod1/c1\n", map[string]string{"memory/kubepods/pod1/c1/memory.limit_in_bytes": "268435456\n"}, 256 << 20},
		{"v1 unlimited", "9:memory:/\n", map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0},
		{"v1 path not visible", "9:memory:/docker/abc\n", map[string]string{"memory/memory.limit_in_bytes": "67108864\n"}, 64 << 20},
		{"no memory controller", "12:cpu:/a\n", nil, 0},
		{"garbage", "what\n9:memory:/a\n", map[string]string{"memory/a/memory.limit_in_bytes": "lots\n"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			root := filepath.Join(dir, "cgroup")
			write(t, filepath.Join(dir, "self"), tt.cgroup)
			for f, content := range tt.files {
				write(t, filepath.Join(root, f), content)
			}
			if got := cgroupMemoryLimit(filepath.Join(dir, "self"), root); got != tt.want {
				t.Errorf("cgroupMemoryLimit = %d; want %d", got, tt.want)
			}
		})
	}
	if got := cgroupMemoryLimit("/nonexistent", "/nonexistent"); got != 0 {
		t.Errorf("without /proc/self/cgroup: %d; want 0", got)
	}
}

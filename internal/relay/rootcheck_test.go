package relay

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRootCheckScript runs sluice_root_check as alice, for alice, on roots
// made by the test under a fresh directory of root's: owners and modes
// another user could or could not use to move alice's socket directory.
func TestRootCheckScript(t *testing.T) {
	users := loadUsers(t)
	alice, bob := users.alice, users.bob
	root := account{name: "root"}
	sticky := os.ModeSticky | 0o777
	type entry struct {
		name  string
		owner account
		mode  os.FileMode // a directory's; a file with os.ModeIrregular
		link  string      // a link's target, relative to the base
	}
	cases := []struct {
		name    string
		entries []entry // made in order under the base
		check   string  // the root checked, under the base
		want    string  // "" when safe; else a part of the reason
	}{
		{"root's sticky root", []entry{{"sock", root, sticky, ""}}, "sock", ""},
		{"alice's sticky root, as her job makes it", []entry{{"sock", alice, sticky, ""}}, "sock", ""},
		{"alice's own root", []entry{{"sock", alice, 0o700, ""}}, "sock", ""},
		{"bob's sticky root", []entry{{"sock", bob, sticky, ""}}, "sock", "/sock is owned by uid " + strconv.Itoa(int(bob.uid)) + " (" + bob.name + "), not by root or uid " + strconv.Itoa(int(alice.uid))},
		{"bob's private root", []entry{{"sock", bob, 0o755, ""}}, "sock", "owned by uid " + strconv.Itoa(int(bob.uid))},
		{"group-writable root", []entry{{"sock", root, 0o775, ""}}, "sock", "writable by others (drwxrwxr-x) and not sticky"},
		{"alice's root open to all, not sticky", []entry{{"sock", alice, 0o777, ""}}, "sock", "writable by others (drwxrwxrwx) and not sticky"},
		{"a parent of bob's", []entry{{"p", bob, 0o755, ""}, {"p/sock", root, sticky, ""}}, "p/sock", "/p is owned by uid " + strconv.Itoa(int(bob.uid))},
		{"a parent open to all", []entry{{"p", root, 0o777, ""}, {"p/sock", root, sticky, ""}}, "p/sock", "/p is writable by others"},
		{"root's link to a safe root", []entry{{"real", root, sticky, ""}, {"sock", root, 0, "real"}}, "sock", ""},
		{"bob's link to a safe root", []entry{{"real", root, sticky, ""}, {"sock", bob, 0, "real"}}, "sock", "the symbolic link"},
		{"root's link into bob's directory", []entry{{"b", bob, 0o755, ""}, {"b/real", root, sticky, ""}, {"sock", root, 0, "b/real"}}, "sock", "/b is owned by uid " + strconv.Itoa(int(bob.uid))},
		{"a file", []entry{{"sock", alice, os.ModeIrregular, ""}}, "sock", "is not a directory"},
		{"missing", nil, "sock", "/sock is not a directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base, err := os.MkdirTemp("", "sluice-rootcheck-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(base) })
			if err := os.Chmod(base, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, e := range tc.entries {
				p := filepath.Join(base, e.name)
				switch {
				case e.link != "":
					err = os.Symlink(filepath.Join(base, e.link), p)
				case e.mode == os.ModeIrregular:
					err = os.WriteFile(p, nil, 0o600)
				default:
					if err = os.Mkdir(p, 0o700); err == nil {
						err = os.Chmod(p, e.mode)
					}
				}
				if err == nil {
					err = os.Lchown(p, int(e.owner.uid), int(e.owner.gid))
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			check := filepath.Join(base, tc.check)
			cmd := exec.Command("sh", "-c", RootCheckScript+`
sluice_root_check "$1" "$2"`, "sh", check, strconv.Itoa(int(alice.uid)))
			asUser(cmd, alice)
			out, err := cmd.CombinedOutput()
			switch {
			case tc.want == "" && (err != nil || len(out) != 0):
				t.Errorf("%s: got %v, %q; want it safe", check, err, out)
			case tc.want != "" && (err == nil || !strings.Contains(string(out), tc.want)):
				t.Errorf("%s: got %v, %q; want it refused with %q", check, err, out, tc.want)
			}
		})
	}
}

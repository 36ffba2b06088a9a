package chart

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// The pre-delete hook runs `sluice-vk uninstall` for the chart's node and
// Deployment, with rights of its own and no more than it needs: the node's
// deletion, the pods' listing and deletion, the Deployment's scale-down and
// the leader Lease's deletion, each by name where RBAC can say it. Every
// object of the hook is deleted once it succeeded. uninstall.cleanup=false
// renders none.
func TestUninstallHook(t *testing.T) {
	job, rules := uninstallHook(t, render(t, "default"))
	args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")
	const want = "uninstall --node=hpc-a --namespace=sluice-system --deployment=sluice --selector=app.kubernetes.io/name=sluice,app.kubernetes.io/instance=sluice --timeout=5m"
	if args != want {
		t.Errorf("Job args %q; want %q", args, want)
	}
	wantRules := []string{
		"cluster  nodes [hpc-a] [delete]",
		"cluster  pods [] [list delete]",
		"sluice-system apps deployments [sluice] [patch]",
		"sluice-system coordination.k8s.io leases [sluice-vk-hpc-a] [delete]",
	}
	if !slices.Equal(rules, wantRules) {
		t.Errorf("hook rules\n%s\nwant\n%s", strings.Join(rules, "\n"), strings.Join(wantRules, "\n"))
	}

	if off := render(t, "default", "--set", "uninstall.cleanup=false"); len(off.hooks) != 0 {
		t.Errorf("uninstall.cleanup=false: %d hook objects; want none", len(off.hooks))
	}
}

// With the tunnel on a node that is not confined, sluice-vk copies the
// credentials into shadow namespaces: the hook deletes every copy of a
// credential of the release's namespace (--delete-copies: what was copied,
// the bastion's key and names set in config.Network.SSH included, not a
// list of the chart's names), with the right to list and delete Secrets
// and ConfigMaps and to list the shadows (a copy another node's shadow
// mounts is kept); with ReplicateCredentials off, or on a confined node
// (the credentials are the chart's, in the tenant namespace), there is
// nothing to delete and no such right.
func TestUninstallHookDeletesCopies(t *testing.T) {
	tunnel := []string{"--set", "config.Network.EnableTunnel=true", "--set-string", "credentials.nodeKnownHosts=n1 ssh-ed25519 AAAA"}
	job, rules := uninstallHook(t, render(t, "default", tunnel...))
	args := job.Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(args, "--delete-copies") {
		t.Errorf("Job args %q; want --delete-copies", args)
	}
	for _, want := range []string{"cluster  secrets [] [list delete]", "cluster  configmaps [] [list delete]", "cluster apps deployments [] [list]"} {
		if !slices.Contains(rules, want) {
			t.Errorf("hook rules %q; want %s", rules, want)
		}
	}
	for name, r := range map[string]rendered{
		"ReplicateCredentials false": render(t, "default", append(tunnel, "--set", "config.Network.SSH.ReplicateCredentials=false")...),
		"tenant":                     render(t, "tenant"),
	} {
		job, rules := uninstallHook(t, r)
		if args := job.Spec.Template.Spec.Containers[0].Args; slices.Contains(args, "--delete-copies") {
			t.Errorf("%s: Job args %q; want no --delete-copies", name, args)
		}
		for _, rule := range rules {
			if strings.Contains(rule, "secrets") || strings.Contains(rule, "configmaps") || strings.Contains(rule, "deployments [] [list]") {
				t.Errorf("%s: hook rule %q; want none on secrets or configmaps", name, rule)
			}
		}
	}
}

// uninstallHook is the hook's Job and its rules (sorted, see ruleStrings).
func uninstallHook(t *testing.T, r rendered) (*batchv1.Job, []string) {
	t.Helper()
	var job *batchv1.Job
	var rules []string
	for _, o := range r.hooks {
		m := o.(interface {
			GetAnnotations() map[string]string
			GetName() string
		})
		if a := m.GetAnnotations(); a["helm.sh/hook"] != "pre-delete" || a["helm.sh/hook-delete-policy"] != "before-hook-creation,hook-succeeded" {
			t.Errorf("%T %s: hook annotations %v; want pre-delete, deleted once it succeeded", o, m.GetName(), a)
		}
		switch o := o.(type) {
		case *batchv1.Job:
			job = o
		case *rbacv1.ClusterRole:
			rules = append(rules, ruleStrings("cluster", o.Rules)...)
		case *rbacv1.Role:
			rules = append(rules, ruleStrings(o.Namespace, o.Rules)...)
		}
	}
	if job == nil {
		t.Fatal("no uninstall Job")
	}
	slices.Sort(rules)
	return job, rules
}

func ruleStrings(where string, rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				out = append(out, fmt.Sprintf("%s %s %s %v %v", where, g, res, r.ResourceNames, r.Verbs))
			}
		}
	}
	return out
}

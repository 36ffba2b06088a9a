package shadow

import (
	"fmt"
	"strings"
	"sync"

	"github.com/sluice-hpc/sluice/internal/annotations"
	corev1 "k8s.io/api/core/v1"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// evaluator holds the checks of the Pod Security Standards as the API
// server's PodSecurity admission makes them (the release of our k8s.io/api).
var evaluator = sync.OnceValues(func() (policy.Evaluator, error) {
	return policy.NewEvaluator(policy.DefaultChecks(), nil)
})

// violations are the checks of level lv that a pod of tpl breaks, each
// "what: details"; none when it passes.
func violations(lv psapi.LevelVersion, tpl *corev1.PodTemplateSpec) ([]string, error) {
	e, err := evaluator()
	if err != nil {
		return nil, fmt.Errorf("shadow: pod security checks: %w", err)
	}
	res := policy.AggregateCheckResults(e.EvaluatePod(lv, &tpl.ObjectMeta, &tpl.Spec))
	var out []string
	for i, r := range res.ForbiddenReasons {
		out = append(out, r+": "+res.ForbiddenDetails[i])
	}
	return out, nil
}

// checkPodSecurity tells whether the PodSecurity admission would admit the
// shadow pod of tpl, pod's shadow, into ns, by the level ns enforces (its
// labels; a namespace without them is not checked). A shadow it would
// refuse is a *jobscript.PodError naming the checks broken: the ReplicaSet
// would fail to create the shadow pod, and the offloaded pod would wait for
// it with nothing telling why. sluice's own containers pass the restricted
// level; kept containers run as the user gave them (podSecurity), so the
// fault is theirs.
//
// The API server may exempt namespaces, users or runtime classes in its
// admission configuration, which this check cannot see: Ensure makes it
// only in the shadow namespaces of a node not confined to a tenant
// namespace, which sluice creates and labels itself.
func checkPodSecurity(ns *corev1.Namespace, pod *corev1.Pod, tpl *corev1.PodTemplateSpec) error {
	if _, ok := ns.Labels[psapi.EnforceLevelLabel]; !ok {
		return nil
	}
	p, _ := psapi.PolicyToEvaluate(ns.Labels, psapi.Policy{
		Enforce: psapi.LevelVersion{Level: psapi.LevelPrivileged, Version: psapi.LatestVersion()},
	})
	broken, err := violations(p.Enforce, tpl)
	if err != nil || len(broken) == 0 {
		return err
	}
	field := "metadata.annotations[" + annotations.DisableOffloadContainers + "]"
	if len(KeptContainers(pod)) == 0 && len(KeptInit(pod)) > 0 {
		field = "metadata.annotations[" + annotations.DisableOffloadInitContainers + "]"
	}
	return podErr(field, "the shadow namespace %s enforces the %s Pod Security Standard, which the shadow pod would break (%s); "+
		"give the kept containers a security context that meets it, or run the pod on a node confined to its namespace (Network.TenantNamespace)",
		ns.Name, p.Enforce.Level, strings.Join(broken, "; "))
}

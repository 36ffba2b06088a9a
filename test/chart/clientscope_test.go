package chart

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/types"
	"strings"

	"k8s.io/client-go/kubernetes/scheme"
)

// Where a typed client's requests go, and which resource it is for.

// scopeOf is where the requests of the typed client e go: a resource
// client made without a namespace (Nodes()) or with metav1.NamespaceAll is
// cluster-wide, one made with a constant namespace goes there; a variable
// holding such a client is followed to what was assigned to it.
func (a *analysis) scopeOf(e ast.Expr, depth int) scope {
	switch e := ast.Unparen(e).(type) {
	case *ast.CallExpr:
		if len(e.Args) == 0 {
			return scope{kind: clusterWide}
		}
		if v := a.info.Types[e.Args[0]].Value; len(e.Args) == 1 && v != nil && v.Kind() == constant.String {
			if ns := constant.StringVal(v); ns != "" {
				return scope{kind: fixedNamespace, ns: ns}
			}
			return scope{kind: clusterWide}
		}
		if len(e.Args) == 1 && a.isCredentialsNamespace(e.Args[0]) {
			return scope{kind: fixedNamespace, ns: credentialsNamespace}
		}
	case *ast.Ident:
		if o := a.info.Uses[e]; o != nil && depth < 4 {
			s := scope{kind: anyNamespace}
			for _, v := range a.assigned[o] {
				if vs := a.scopeOf(v, depth+1); vs.kind == clusterWide {
					return vs
				} else if vs.kind == fixedNamespace {
					s = vs
				}
			}
			return s
		}
	}
	return scope{kind: anyNamespace}
}

// credentialsNamespaceFields are the fields of sluice's types that hold
// sluice-vk's --namespace: where the site's credentials are (and the
// records of the shadow namespaces); the chart passes the release's
// namespace, or the tenant namespace on a confined node.
var credentialsNamespaceFields = map[string]bool{
	"github.com/sluice-hpc/sluice/internal/shadow.Spec.CredentialsNamespace": true,
}

// isCredentialsNamespace says whether e reads one of credentialsNamespaceFields.
func (a *analysis) isCredentialsNamespace(e ast.Expr) bool {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok {
		return false
	}
	s := a.info.Selections[sel]
	if s == nil || s.Kind() != types.FieldVal {
		return false
	}
	recv := s.Recv()
	if p, ok := recv.(*types.Pointer); ok {
		recv = p.Elem()
	}
	return credentialsNamespaceFields[types.TypeString(recv, nil)+"."+sel.Sel.Name]
}

// unfollowed says whether o is a client whose requests are not typed:
// dynamic, metadata and discovery clients, a REST client made from a
// rest.Config.
func unfollowed(o types.Object) bool {
	switch o.Pkg().Path() {
	case "k8s.io/client-go/dynamic", "k8s.io/client-go/metadata", "k8s.io/client-go/discovery":
		_, isFunc := o.(*types.Func)
		return isFunc
	case "k8s.io/client-go/rest":
		return strings.HasPrefix(o.Name(), "RESTClientFor") || o.Name() == "UnversionedRESTClientFor"
	}
	return false
}

// isClient says whether t is one of client-go's clientsets or typed
// clients (an interface of k8s.io/client-go/kubernetes/...).
func isClient(t types.Type) bool {
	if t == nil {
		return false
	}
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	if !ok || n.Obj().Pkg() == nil {
		return false
	}
	path := n.Obj().Pkg().Path()
	if path != "k8s.io/client-go/kubernetes" && !strings.HasPrefix(path, "k8s.io/client-go/kubernetes/typed/") {
		return false
	}
	_, iface := n.Underlying().(*types.Interface)
	return iface || n.Obj().Name() == "Clientset"
}

// resourceOf is the resource and API group of a typed resource client
// (PodInterface): the resource is the name of the getter method that makes
// it (Pods, ServiceAccounts), the group the one of the scheme whose first
// label is the package's directory (typed/coordination/v1).
func resourceOf(t types.Type) (resource, group string, err error) {
	n, ok := types.Unalias(t).(*types.Named)
	if !ok {
		return "", "", fmt.Errorf("%s is not a typed resource client", t)
	}
	pkg := n.Obj().Pkg()
	for _, name := range pkg.Scope().Names() {
		getter, ok := pkg.Scope().Lookup(name).Type().Underlying().(*types.Interface)
		if !ok || !strings.HasSuffix(name, "Getter") || getter.NumMethods() != 1 {
			continue
		}
		m := getter.Method(0)
		if res := m.Signature().Results(); res.Len() == 1 && types.Identical(res.At(0).Type(), n) {
			resource = strings.ToLower(m.Name())
		}
	}
	if resource == "" {
		return "", "", fmt.Errorf("%s: no getter makes it: not a typed resource client", t)
	}
	parts := strings.Split(strings.TrimPrefix(pkg.Path(), "k8s.io/client-go/kubernetes/typed/"), "/")
	if parts[0] == "core" {
		return resource, "", nil
	}
	for _, gv := range scheme.Scheme.PrioritizedVersionsAllGroups() {
		if first, _, _ := strings.Cut(gv.Group, "."); first == parts[0] {
			return resource, gv.Group, nil
		}
	}
	return "", "", fmt.Errorf("%s: no API group %s in client-go's scheme", t, parts[0])
}

package chart

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes/scheme"
)

// This file reads, from the Go source of sluice-vk (every package of this
// module that cmd/sluice-vk links), which requests it can make to the API
// server: the methods of client-go's typed clients it calls, the typed
// clients it hands to a library (described in handoffs) and those it turns
// into an interface of its own (each method of that interface counts). The
// chart's RBAC is compared with that in rbac_test.go.

const module = "github.com/sluice-hpc/sluice"

// right is one verb on one resource (with its subresource, "pods/status").
type right struct{ Group, Resource, Verb string }

func (r right) String() string {
	g := r.Group
	if g == "" {
		g = "core"
	}
	return r.Verb + " " + g + "/" + r.Resource
}

// scope is where a request goes.
type scope struct {
	kind scopeKind
	// ns is the namespace of a fixedNamespace scope; releaseNamespace
	// stands for the release's.
	ns string
}

type scopeKind int

const (
	// anyNamespace is a namespace chosen at run time: a pod's, its
	// shadow's, the tenant namespace on a confined node.
	anyNamespace scopeKind = iota
	// clusterWide is a cluster-scoped resource, or every namespace at
	// once.
	clusterWide
	// fixedNamespace is one namespace known in advance.
	fixedNamespace
)

const releaseNamespace = "{release}"

// credentialsNamespace stands for sluice-vk's --namespace (see
// credentialsNamespaceFields).
const credentialsNamespace = "{credentials}"

func (s scope) String() string {
	switch s.kind {
	case clusterWide:
		return "cluster-wide"
	case fixedNamespace:
		return "in namespace " + s.ns
	}
	return "in a pod's namespace"
}

// use is one request sluice-vk can make, and where the source asks for it.
type use struct {
	right
	scope scope
	fn    string // the function making it (types.Func.FullName)
	pos   string
}

// handoff is what a library does with a typed client sluice-vk hands it.
type handoff struct {
	rights []right
	scope  scope
}

// handoffs are the libraries' calls, read from their source at the
// versions of go.mod, keyed by the function (or struct field) a typed
// client is handed to. A hand-off missing here fails the test: read the
// library and add what it calls.
var handoffs = map[string][]handoff{
	// the pod informer of the node (field selector spec.nodeName); the
	// factory of ConfigMaps, Secrets and Services is made but never
	// started (vk/run.go)
	"k8s.io/client-go/informers.NewSharedInformerFactoryWithOptions": {
		{rights: verbs("", "pods", "list", "watch"), scope: scope{kind: clusterWide}},
	},
	// node.PodController: UpdateStatus of every pod bound to the node
	// (foreign pods refused on a confined node too), Delete of a pod once
	// the provider let it go (pods of the tenant namespace only on a
	// confined node: a refused pod is Failed, and the API server deletes
	// a Failed pod at once)
	"github.com/virtual-kubelet/virtual-kubelet/node.PodControllerConfig.PodClient": {
		{rights: verbs("", "pods/status", "update"), scope: scope{kind: clusterWide}},
		{rights: verbs("", "pods", "delete"), scope: scope{kind: anyNamespace}},
	},
	// node.NodeController: Get and Patch of the status, Create when missing
	"github.com/virtual-kubelet/virtual-kubelet/node.NewNodeController": {
		{rights: append(verbs("", "nodes", "get", "create"), verbs("", "nodes/status", "patch")...), scope: scope{kind: clusterWide}},
	},
	// the lease controller: Get, Create, Update of the node's Lease
	"github.com/virtual-kubelet/virtual-kubelet/node.WithNodeEnableLeaseV1": {
		{rights: verbs("coordination.k8s.io", "leases", "get", "create", "update"), scope: scope{kind: fixedNamespace, ns: "kube-node-lease"}},
	},
	// returns client.CoordinationV1().Leases("kube-node-lease"): no request
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil.NodeLeaseV1Client": nil,
	// the kubelet API's authentication and authorisation
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil.WebhookAuth": {
		{rights: append(verbs("authentication.k8s.io", "tokenreviews", "create"), verbs("authorization.k8s.io", "subjectaccessreviews", "create")...), scope: scope{kind: clusterWide}},
	},
	// the event broadcaster's sink: Create, and Patch of a repeated
	// Event, in the namespace of the object (foreign pods too)
	"k8s.io/client-go/kubernetes/typed/core/v1.EventSinkImpl.Interface": {
		{rights: verbs("", "events", "create", "patch"), scope: scope{kind: clusterWide}},
	},
	// leader election: Get, Create, Update of the Lease
	// sluice-vk-<NodeName> in the release's namespace
	"k8s.io/client-go/tools/leaderelection/resourcelock.LeaseLock.Client": {
		{rights: verbs("coordination.k8s.io", "leases", "get", "create", "update"), scope: scope{kind: fixedNamespace, ns: releaseNamespace}},
	},
}

func verbs(group, resource string, vs ...string) []right {
	var rs []right
	for _, v := range vs {
		rs = append(rs, right{group, resource, v})
	}
	return rs
}

// methodVerbs maps a typed client's methods to the verb they ask for and
// the subresource they act on.
var methodVerbs = map[string]struct{ verb, sub string }{
	"Get": {"get", ""}, "List": {"list", ""}, "Watch": {"watch", ""},
	"Create": {"create", ""}, "Update": {"update", ""}, "Delete": {"delete", ""},
	"DeleteCollection": {"deletecollection", ""}, "Patch": {"patch", ""}, "Apply": {"patch", ""},
	"UpdateStatus": {"update", "status"}, "ApplyStatus": {"patch", "status"},
	"GetLogs": {"get", "log"}, "Bind": {"create", "binding"},
	"Evict": {"create", "eviction"}, "EvictV1": {"create", "eviction"}, "EvictV1beta1": {"create", "eviction"},
	"UpdateEphemeralContainers": {"update", "ephemeralcontainers"}, "UpdateResize": {"update", "resize"},
	"GetScale": {"get", "scale"}, "UpdateScale": {"update", "scale"}, "ApplyScale": {"patch", "scale"},
	"ProxyGet":                 {"get", "proxy"},
	"CreateToken":              {"create", "token"},
	"CreateWithEventNamespace": {"create", ""}, "UpdateWithEventNamespace": {"update", ""},
	"PatchWithEventNamespace": {"patch", ""}, "Search": {"list", ""},
}

// calls is what clientCalls found, once per test binary.
var calls struct {
	once sync.Once
	uses []use
	err  error
}

// clientCalls returns the requests sluice-vk's source can make.
func clientCalls(t *testing.T) []use {
	t.Helper()
	calls.once.Do(func() { calls.uses, calls.err = analyse() })
	if calls.err != nil {
		t.Fatal(calls.err)
	}
	return calls.uses
}

// listed is a package as `go list -json` gives it.
type listed struct {
	ImportPath string
	Dir        string
	Export     string
	GoFiles    []string
	CgoFiles   []string
	Module     *struct{ Path string }
}

// analyse type-checks the packages of this module that sluice-vk links,
// against the export data `go list -export` leaves for their dependencies
// (no source of client-go or virtual-kubelet is read), and collects their
// requests.
func analyse() ([]use, error) {
	cmd := exec.Command("go", "list", "-deps", "-export", "-json=ImportPath,Dir,Export,GoFiles,CgoFiles,Module", "./cmd/sluice-vk")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, stderr.String())
	}
	exports := map[string]string{}
	var ours []listed
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list: %w", err)
		}
		exports[p.ImportPath] = p.Export
		if p.Module != nil && p.Module.Path == module {
			if len(p.CgoFiles) > 0 {
				return nil, fmt.Errorf("%s: cgo files are not read", p.ImportPath)
			}
			ours = append(ours, p)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	a := &analysis{fset: fset}
	for _, p := range ours {
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			files = append(files, f)
		}
		info := &types.Info{
			Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{},
			Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{},
			Instances: map[*ast.Ident]types.Instance{},
		}
		conf := types.Config{Importer: imp}
		if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil {
			return nil, fmt.Errorf("type-check %s: %w", p.ImportPath, err)
		}
		a.info = info
		for _, f := range files {
			a.file(f)
		}
	}
	return a.uses, errors.Join(a.errs...)
}

type analysis struct {
	fset *token.FileSet
	info *types.Info
	// assigned holds, for the file being read, what was assigned to each
	// variable.
	assigned map[types.Object][]ast.Expr
	uses     []use
	errs     []error
}

func (a *analysis) fail(n ast.Node, format string, args ...any) {
	a.errs = append(a.errs, fmt.Errorf("%s: %s", a.fset.Position(n.Pos()), fmt.Sprintf(format, args...)))
}

func (a *analysis) file(f *ast.File) {
	a.assigned = map[types.Object][]ast.Expr{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if len(n.Lhs) == len(n.Rhs) {
				for i, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						if o := a.object(id); o != nil {
							a.assigned[o] = append(a.assigned[o], n.Rhs[i])
						}
					}
				}
			}
		case *ast.ValueSpec:
			if len(n.Names) == len(n.Values) {
				for i, id := range n.Names {
					a.assigned[a.info.Defs[id]] = append(a.assigned[a.info.Defs[id]], n.Values[i])
				}
			}
		}
		return true
	})
	ast.Inspect(f, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			if o := a.info.Uses[id]; o != nil && o.Pkg() != nil && unfollowed(o) {
				a.fail(id, "%s.%s makes requests this test cannot follow: use a typed client", o.Pkg().Path(), o.Name())
			}
		}
		return true
	})
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		fn := a.info.Defs[fd.Name].(*types.Func).FullName()
		ast.PreorderStack(fd.Body, nil, func(n ast.Node, stack []ast.Node) bool {
			if e, ok := n.(ast.Expr); ok && len(stack) > 0 {
				a.expr(fn, e, stack)
			}
			return true
		})
	}
}

func (a *analysis) object(id *ast.Ident) types.Object {
	if o := a.info.Defs[id]; o != nil {
		return o
	}
	return a.info.Uses[id]
}

// expr looks at e if it is a typed client: how it is used says what it
// asks of the API server.
func (a *analysis) expr(fn string, e ast.Expr, stack []ast.Node) {
	tv, ok := a.info.Types[e]
	if !ok || !tv.IsValue() || !isClient(tv.Type) {
		return
	}
	parent := stack[len(stack)-1]
	switch p := parent.(type) {
	case *ast.SelectorExpr:
		a.selected(fn, e, p, stack[:len(stack)-1])
	case *ast.CallExpr:
		if p.Fun == e {
			return
		}
		a.passed(fn, e, p)
	case *ast.KeyValueExpr:
		lit, ok := stack[len(stack)-2].(*ast.CompositeLit)
		key, isKey := p.Key.(*ast.Ident)
		if !ok || !isKey || p.Value != e {
			a.fail(e, "a typed client in a key")
			return
		}
		a.field(fn, e, lit, key.Name)
	case *ast.CompositeLit:
		st, ok := a.info.Types[p].Type.Underlying().(*types.Struct)
		if !ok {
			a.fail(e, "a typed client in a %s literal", a.info.Types[p].Type)
			return
		}
		a.field(fn, e, p, st.Field(slices.Index(p.Elts, e)).Name())
	case *ast.AssignStmt:
		for i, r := range p.Rhs {
			if r == e && len(p.Lhs) == len(p.Rhs) {
				a.into(fn, e, a.info.TypeOf(p.Lhs[i]), "assignment")
			}
		}
	case *ast.ValueSpec:
		for i, v := range p.Values {
			if v == e && len(p.Names) == len(p.Values) {
				a.into(fn, e, a.info.TypeOf(p.Names[i]), "declaration")
			}
		}
	case *ast.ReturnStmt, *ast.BinaryExpr:
		// returned as a typed client (followed where it is used), or
		// compared with nil
	default:
		a.fail(e, "a typed client used in a %T: this test does not follow it", parent)
	}
}

// selected is a method called on a typed client: one returning another
// typed client (CoreV1, Pods) is followed there; any other is a request.
func (a *analysis) selected(fn string, e ast.Expr, sel *ast.SelectorExpr, stack []ast.Node) {
	s := a.info.Selections[sel]
	if s == nil || s.Kind() != types.MethodVal {
		return // a field of a struct
	}
	call, ok := stack[len(stack)-1].(*ast.CallExpr)
	if !ok || call.Fun != sel {
		a.fail(sel, "method value %s of a typed client", sel.Sel.Name)
		return
	}
	if isClient(a.info.TypeOf(call)) {
		return
	}
	res, group, err := resourceOf(a.info.TypeOf(e))
	if err != nil {
		a.fail(sel, "%v", err)
		return
	}
	m, ok := methodVerbs[sel.Sel.Name]
	if !ok {
		a.fail(sel, "%s.%s: which request is it? (add it to methodVerbs)", a.info.TypeOf(e), sel.Sel.Name)
		return
	}
	sub := m.sub
	if sel.Sel.Name == "Patch" && len(call.Args) > 5 {
		var subs []string
		for _, arg := range call.Args[5:] {
			v := a.info.Types[arg].Value
			if v == nil || v.Kind() != constant.String {
				a.fail(arg, "a subresource that is not a constant")
				return
			}
			subs = append(subs, constant.StringVal(v))
		}
		sub = strings.Join(subs, "/")
	}
	if sub != "" {
		res += "/" + sub
	}
	a.add(fn, call, right{group, res, m.verb}, a.scopeOf(e, 0))
}

// passed is a typed client handed to a function: one of this module
// (followed there, or through an interface of its own) or a library's
// (handoffs).
func (a *analysis) passed(fn string, e ast.Expr, call *ast.CallExpr) {
	callee := a.callee(call.Fun)
	if callee == nil {
		a.fail(call, "a typed client handed to a call of %T", call.Fun)
		return
	}
	if callee.Pkg() != nil && strings.HasPrefix(callee.Pkg().Path(), module) {
		sig := callee.Signature()
		if inst, ok := a.info.TypeOf(call.Fun).(*types.Signature); ok {
			sig = inst // instantiated generic
		}
		i := slices.Index(call.Args, e)
		var param types.Type
		if sig.Variadic() && i >= sig.Params().Len()-1 {
			param = sig.Params().At(sig.Params().Len() - 1).Type().(*types.Slice).Elem()
		} else {
			param = sig.Params().At(i).Type()
		}
		a.into(fn, e, param, "argument of "+callee.FullName())
		return
	}
	a.handedOff(fn, e, callee.FullName())
}

// field is a typed client put in field name of a struct literal.
func (a *analysis) field(fn string, e ast.Expr, lit *ast.CompositeLit, name string) {
	t := a.info.TypeOf(lit)
	if n, ok := types.Unalias(t).(*types.Named); ok && n.Obj().Pkg() != nil && !strings.HasPrefix(n.Obj().Pkg().Path(), module) {
		a.handedOff(fn, e, n.Obj().Pkg().Path()+"."+n.Obj().Name()+"."+name)
		return
	}
	st, _ := t.Underlying().(*types.Struct)
	for i := range st.NumFields() {
		if f := st.Field(i); f.Name() == name {
			a.into(fn, e, f.Type(), "field "+name)
			return
		}
	}
	a.fail(e, "no field %s in %s", name, t)
}

// into is a typed client stored or passed as a value of type to: a typed
// client again (followed where it is used), or an interface of this module,
// whose every method it may be asked.
func (a *analysis) into(fn string, e ast.Expr, to types.Type, what string) {
	if isClient(to) {
		return
	}
	iface, ok := to.Underlying().(*types.Interface)
	if !ok {
		a.fail(e, "a typed client in %s of type %s", what, to)
		return
	}
	from := a.info.TypeOf(e)
	res, group, err := resourceOf(from)
	if err != nil {
		a.fail(e, "%v", err)
		return
	}
	for i := range iface.NumMethods() {
		name := iface.Method(i).Name()
		m, ok := methodVerbs[name]
		if !ok {
			a.fail(e, "%s.%s (through %s): which request is it? (add it to methodVerbs)", from, name, to)
			continue
		}
		r := res
		if m.sub != "" {
			r += "/" + m.sub
		}
		a.add(fn, e, right{group, r, m.verb}, a.scopeOf(e, 0))
	}
}

func (a *analysis) handedOff(fn string, e ast.Expr, key string) {
	hs, ok := handoffs[key]
	if !ok {
		a.fail(e, "a typed client handed to %s: read what it calls and add it to handoffs", key)
		return
	}
	for _, h := range hs {
		for _, r := range h.rights {
			a.add(fn, e, r, h.scope)
		}
	}
}

func (a *analysis) add(fn string, n ast.Node, r right, s scope) {
	a.uses = append(a.uses, use{right: r, scope: s, fn: fn, pos: a.fset.Position(n.Pos()).String()})
}

func (a *analysis) callee(fun ast.Expr) *types.Func {
	switch f := ast.Unparen(fun).(type) {
	case *ast.Ident:
		o, _ := a.info.Uses[f].(*types.Func)
		return o
	case *ast.SelectorExpr:
		o, _ := a.info.Uses[f.Sel].(*types.Func)
		return o
	case *ast.IndexExpr: // an explicit instantiation
		return a.callee(f.X)
	}
	return nil
}

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

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
)

// The walk over sluice-vk's Go source that finds its requests (see
// clientcalls_test.go for what a request is).

// analysed is what clientCallsOf found for a command, once per test
// binary.
type analysed struct {
	once  sync.Once
	uses  []use
	calls map[string][]string
	err   error
}

var calls sync.Map // command package → *analysed

// clientCalls returns the requests sluice-vk's source can make.
func clientCalls(t *testing.T) []use {
	t.Helper()
	return clientCallsOf(t, "./cmd/sluice-vk")
}

// clientCallsOf returns the requests the source of the command cmd (a
// package path relative to the module's root) can make.
func clientCallsOf(t *testing.T, cmd string) []use {
	t.Helper()
	v, _ := calls.LoadOrStore(cmd, &analysed{})
	a := v.(*analysed)
	a.once.Do(func() { a.uses, a.calls, a.err = analyse(cmd) })
	if a.err != nil {
		t.Fatal(a.err)
	}
	return a.uses
}

// clientCallsFrom returns the requests of the command cmd that the
// functions of the packages roots (import paths) make, or the functions of
// this module they call, directly or not: what a command that links a
// package for a few of its functions asks for. A call through an interface
// or a function value is followed only within the roots (all of whose
// functions count).
func clientCallsFrom(t *testing.T, cmd string, roots ...string) []use {
	t.Helper()
	uses := clientCallsOf(t, cmd)
	v, _ := calls.Load(cmd)
	edges := v.(*analysed).calls
	reached := map[string]bool{}
	var walk func(fn string)
	walk = func(fn string) {
		if reached[fn] {
			return
		}
		reached[fn] = true
		for _, callee := range edges[fn] {
			walk(callee)
		}
	}
	for fn := range edges {
		if slices.ContainsFunc(roots, func(root string) bool { return funcPackage(fn) == root }) {
			walk(fn)
		}
	}
	var out []use
	for _, u := range uses {
		if reached[u.fn] {
			out = append(out, u)
		}
	}
	return out
}

// funcPackage is the import path of the function named fn, as
// types.Func.FullName writes it: "path.F" or "(*path.T).M".
func funcPackage(fn string) string {
	fn = strings.TrimPrefix(strings.TrimPrefix(fn, "("), "*")
	if i := strings.Index(fn, ")"); i >= 0 {
		fn = fn[:i]
	}
	slash := max(strings.LastIndex(fn, "/"), 0)
	if dot := strings.Index(fn[slash:], "."); dot >= 0 {
		return fn[:slash+dot]
	}
	return fn
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

// analyse type-checks the packages of this module that the command pkg
// links, against the export data `go list -export` leaves for their
// dependencies (no source of client-go or virtual-kubelet is read), and
// collects their requests.
func analyse(pkg string) ([]use, map[string][]string, error) {
	cmd := exec.Command("go", "list", "-deps", "-export", "-json=ImportPath,Dir,Export,GoFiles,CgoFiles,Module", pkg)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("go list: %w: %s", err, stderr.String())
	}
	exports := map[string]string{}
	var ours []listed
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, nil, fmt.Errorf("go list: %w", err)
		}
		exports[p.ImportPath] = p.Export
		if p.Module != nil && p.Module.Path == module {
			if len(p.CgoFiles) > 0 {
				return nil, nil, fmt.Errorf("%s: cgo files are not read", p.ImportPath)
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
	a := &analysis{fset: fset, calls: map[string][]string{}}
	for _, p := range ours {
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, nil, err
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
			return nil, nil, fmt.Errorf("type-check %s: %w", p.ImportPath, err)
		}
		a.info = info
		for _, f := range files {
			a.file(f)
		}
	}
	return a.uses, a.calls, errors.Join(a.errs...)
}

type analysis struct {
	fset *token.FileSet
	info *types.Info
	// assigned holds, for the file being read, what was assigned to each
	// variable.
	assigned map[types.Object][]ast.Expr
	uses     []use
	// calls are the functions of this module each function calls by name
	calls map[string][]string
	errs  []error
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
		if _, ok := a.calls[fn]; !ok {
			a.calls[fn] = nil // a function that calls nothing is known too
		}
		ast.PreorderStack(fd.Body, nil, func(n ast.Node, stack []ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if callee := a.callee(call.Fun); callee != nil && callee.Pkg() != nil && strings.HasPrefix(callee.Pkg().Path(), module) {
					a.calls[fn] = append(a.calls[fn], callee.Origin().FullName())
				}
			}
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
	hs, ok := handoffs[fn+" "+key]
	if !ok {
		hs, ok = handoffs[key]
	}
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

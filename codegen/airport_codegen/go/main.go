// goextract prints, as JSON, the Go declarations pyairport's contract maps to: interfaces,
// structs (with tags, also those declared inside functions), constants of named types,
// functions, package-level error variables, and every string literal with its line and,
// when it is the format of status.Error/Errorf, its gRPC code. It uses only go/ast.
//
// Usage: goextract <module dir> <package dir>...
package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

type Param struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

type Method struct {
	Name    string  `json:"name"`
	Params  []Param `json:"params"`
	Results []Param `json:"results"`
	Doc     string  `json:"doc"`
	Line    int     `json:"line"`
}

type Interface struct {
	Name    string   `json:"name"`
	File    string   `json:"file"`
	Line    int      `json:"line"`
	Doc     string   `json:"doc"`
	Embeds  []string `json:"embeds"`
	Methods []Method `json:"methods"`
}

type Field struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Tag  string `json:"tag"`
	Line int    `json:"line"`
}

type Struct struct {
	Name   string  `json:"name"`
	File   string  `json:"file"`
	Line   int     `json:"line"`
	Doc    string  `json:"doc"`
	Fields []Field `json:"fields"`
}

type Const struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value string `json:"value"`
	File  string `json:"file"`
	Line  int    `json:"line"`
}

type Func struct {
	Name    string  `json:"name"`
	File    string  `json:"file"`
	Line    int     `json:"line"`
	Doc     string  `json:"doc"`
	Params  []Param `json:"params"`
	Results []Param `json:"results"`
}

type Literal struct {
	Value string `json:"value"`
	Line  int    `json:"line"`
	Code  string `json:"code,omitempty"`
}

// APIItem is one exported identifier of the package's public API: a type, a struct field (with
// its tag), an interface or receiver method, a function, a constant or a variable. Sig is what
// a change to it changes: types without parameter names, tags, constant values.
type APIItem struct {
	Name string `json:"name"` // T, T.Field, T.Method, Func, Const
	Kind string `json:"kind"` // type, field, method, func, const, var
	Sig  string `json:"sig"`
	File string `json:"file"`
	Line int    `json:"line"`
}

type Package struct {
	Dir        string               `json:"dir"`
	API        []APIItem            `json:"api"`
	Interfaces map[string]Interface `json:"interfaces"`
	Structs    map[string]Struct    `json:"structs"`
	Consts     []Const              `json:"consts"`
	Funcs      map[string]Func      `json:"funcs"`
	Exported   []Const              `json:"exported"` // name, kind (in Type), file, line
	Literals   map[string][]Literal `json:"literals"` // by file
}

func fields(list *ast.FieldList) []Param {
	out := []Param{}
	if list == nil {
		return out
	}
	for _, f := range list.List {
		typ := types.ExprString(f.Type)
		if len(f.Names) == 0 {
			out = append(out, Param{Name: "", Type: typ})
		}
		for _, n := range f.Names {
			out = append(out, Param{Name: n.Name, Type: typ})
		}
	}
	return out
}

// structFields lists a struct's named fields with their types and (unquoted) tags.
func structFields(st *ast.StructType, line func(token.Pos) int) []Field {
	out := []Field{}
	for _, f := range st.Fields.List {
		tag := ""
		if f.Tag != nil {
			tag, _ = strconv.Unquote(f.Tag.Value)
		}
		for _, name := range f.Names {
			out = append(out, Field{Name: name.Name, Type: types.ExprString(f.Type), Tag: tag, Line: line(name.Pos())})
		}
	}
	return out
}

// addAnonymous records an anonymous struct under name, and each anonymous struct field of it
// as "<name>.<Field>" (the field's type then names that struct), as handlers nest them.
func addAnonymous(pkg *Package, name string, st *ast.StructType, rel string, line func(token.Pos) int, at int) {
	fields := structFields(st, line)
	for _, f := range st.Fields.List {
		nested, ok := f.Type.(*ast.StructType)
		if !ok || len(f.Names) != 1 {
			continue
		}
		nestedName := name + "." + f.Names[0].Name
		addAnonymous(pkg, nestedName, nested, rel, line, line(f.Pos()))
		for j := range fields {
			if fields[j].Name == f.Names[0].Name {
				fields[j].Type = nestedName
			}
		}
	}
	pkg.Structs[name] = Struct{Name: name, File: rel, Line: at, Fields: fields}
}

func doc(groups ...*ast.CommentGroup) string {
	for _, g := range groups {
		if g != nil {
			return strings.TrimSpace(g.Text())
		}
	}
	return ""
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: goextract <module dir> <package dir>...")
		os.Exit(2)
	}
	root := os.Args[1]
	out := map[string]*Package{}
	for _, dir := range os.Args[2:] {
		pkg, err := extract(root, dir)
		if err != nil {
			fmt.Fprintf(os.Stderr, "goextract: %v\n", err)
			os.Exit(2)
		}
		out[dir] = pkg
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(os.Stderr, "goextract: %v\n", err)
		os.Exit(2)
	}
}

func extract(root, dir string) (*Package, error) {
	fset := token.NewFileSet()
	pkg := &Package{Dir: dir, API: []APIItem{}, Interfaces: map[string]Interface{}, Structs: map[string]Struct{}, Funcs: map[string]Func{}, Literals: map[string][]Literal{}}
	matches, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
	if err != nil {
		return nil, err
	}
	sort.Strings(matches)
	if len(matches) == 0 {
		return nil, fmt.Errorf("no Go files in %s", filepath.Join(root, dir))
	}
	for _, path := range matches {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		line := func(p token.Pos) int { return fset.Position(p).Line }
		collectAPI(pkg, file, rel, line)
		for _, decl := range file.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					pkg.Funcs[d.Name.Name] = Func{Name: d.Name.Name, File: rel, Line: line(d.Pos()), Doc: doc(d.Doc), Params: fields(d.Type.Params), Results: fields(d.Type.Results)}
					pkg.Exported = append(pkg.Exported, Const{Name: d.Name.Name, Type: "func", File: rel, Line: line(d.Pos())})
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							pkg.Exported = append(pkg.Exported, Const{Name: s.Name.Name, Type: "type", File: rel, Line: line(s.Pos())})
						}
						if it, ok := s.Type.(*ast.InterfaceType); ok {
							iface := Interface{Name: s.Name.Name, File: rel, Line: line(s.Pos()), Doc: doc(s.Doc, d.Doc), Embeds: []string{}, Methods: []Method{}}
							for _, m := range it.Methods.List {
								if len(m.Names) == 0 {
									iface.Embeds = append(iface.Embeds, types.ExprString(m.Type))
									continue
								}
								ft, ok := m.Type.(*ast.FuncType)
								if !ok {
									continue
								}
								for _, n := range m.Names {
									iface.Methods = append(iface.Methods, Method{Name: n.Name, Params: fields(ft.Params), Results: fields(ft.Results), Doc: doc(m.Doc), Line: line(m.Pos())})
								}
							}
							pkg.Interfaces[s.Name.Name] = iface
						}
					case *ast.ValueSpec:
						for i, n := range s.Names {
							if !n.IsExported() {
								continue
							}
							kind := "var"
							if d.Tok == token.CONST {
								kind = "const"
							}
							pkg.Exported = append(pkg.Exported, Const{Name: n.Name, Type: kind, File: rel, Line: line(n.Pos())})
							if d.Tok == token.CONST && s.Type != nil && i < len(s.Values) {
								if lit, ok := s.Values[i].(*ast.BasicLit); ok {
									value := lit.Value
									if unq, err := strconv.Unquote(value); err == nil {
										value = unq
									}
									pkg.Consts = append(pkg.Consts, Const{Name: n.Name, Type: types.ExprString(s.Type), Value: value, File: rel, Line: line(n.Pos())})
								}
							}
						}
					}
				}
			}
		}
		// Anonymous struct variables inside functions (e.g. `var params struct{...}` that a
		// handler decodes msgpack into), named "<function>.<variable>".
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(node ast.Node) bool {
				spec, ok := node.(*ast.ValueSpec)
				if !ok {
					return true
				}
				st, ok := spec.Type.(*ast.StructType)
				if !ok {
					return true
				}
				for _, name := range spec.Names {
					addAnonymous(pkg, fn.Name.Name+"."+name.Name, st, rel, line, line(name.Pos()))
				}
				return true
			})
		}
		// Structs anywhere (some msgpack structs are declared inside functions) and literals.
		ast.Inspect(file, func(node ast.Node) bool {
			switch n := node.(type) {
			case *ast.TypeSpec:
				if st, ok := n.Type.(*ast.StructType); ok {
					s := Struct{Name: n.Name.Name, File: rel, Line: line(n.Pos()), Doc: doc(n.Doc), Fields: structFields(st, line)}
					if _, seen := pkg.Structs[n.Name.Name]; !seen {
						pkg.Structs[n.Name.Name] = s
					}
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "status" && (sel.Sel.Name == "Errorf" || sel.Sel.Name == "Error") && len(n.Args) >= 2 {
						code := types.ExprString(n.Args[0])
						if lit, ok := n.Args[1].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							if v, err := strconv.Unquote(lit.Value); err == nil {
								pkg.Literals[rel] = append(pkg.Literals[rel], Literal{Value: v, Line: line(lit.Pos()), Code: strings.TrimPrefix(code, "codes.")})
								return false
							}
						}
					}
				}
			case *ast.BasicLit:
				if n.Kind == token.STRING {
					if v, err := strconv.Unquote(n.Value); err == nil {
						pkg.Literals[rel] = append(pkg.Literals[rel], Literal{Value: v, Line: line(n.Pos())})
					}
				}
			}
			return true
		})
	}
	sort.Slice(pkg.Exported, func(i, j int) bool { return pkg.Exported[i].Name < pkg.Exported[j].Name })
	sort.SliceStable(pkg.API, func(i, j int) bool { return pkg.API[i].Name < pkg.API[j].Name })
	return pkg, nil
}

// typesOnly prints a parameter or result list by its types alone, so that renaming a
// parameter is not a change of the API.
func typesOnly(list *ast.FieldList) string {
	if list == nil {
		return ""
	}
	parts := []string{}
	for _, f := range list.List {
		n := len(f.Names)
		if n == 0 {
			n = 1
		}
		for i := 0; i < n; i++ {
			parts = append(parts, types.ExprString(f.Type))
		}
	}
	return strings.Join(parts, ", ")
}

func funcSig(ft *ast.FuncType) string {
	sig := "func"
	if ft.TypeParams != nil {
		sig += "[" + typesOnly(ft.TypeParams) + "]"
	}
	sig += "(" + typesOnly(ft.Params) + ")"
	if ft.Results != nil && len(ft.Results.List) > 0 {
		results := typesOnly(ft.Results)
		if len(ft.Results.List) > 1 || len(ft.Results.List[0].Names) > 1 {
			results = "(" + results + ")"
		}
		sig += " " + results
	}
	return sig
}

// receiverName is the type a method belongs to, and whether it takes a pointer.
func receiverName(recv *ast.FieldList) (string, bool) {
	if recv == nil || len(recv.List) == 0 {
		return "", false
	}
	expr := recv.List[0].Type
	pointer := false
	if star, ok := expr.(*ast.StarExpr); ok {
		expr, pointer = star.X, true
	}
	switch t := expr.(type) {
	case *ast.IndexExpr:
		expr = t.X
	case *ast.IndexListExpr:
		expr = t.X
	}
	if ident, ok := expr.(*ast.Ident); ok {
		return ident.Name, pointer
	}
	return "", pointer
}

func embeddedName(expr ast.Expr) string {
	if star, ok := expr.(*ast.StarExpr); ok {
		expr = star.X
	}
	if sel, ok := expr.(*ast.SelectorExpr); ok {
		return sel.Sel.Name
	}
	if ident, ok := expr.(*ast.Ident); ok {
		return ident.Name
	}
	return types.ExprString(expr)
}

// collectAPI adds the file's exported identifiers to pkg.API.
func collectAPI(pkg *Package, file *ast.File, rel string, line func(token.Pos) int) {
	add := func(name, kind, sig string, pos token.Pos) {
		pkg.API = append(pkg.API, APIItem{Name: name, Kind: kind, Sig: sig, File: rel, Line: line(pos)})
	}
	for _, decl := range file.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				add(d.Name.Name, "func", funcSig(d.Type), d.Pos())
				continue
			}
			owner, pointer := receiverName(d.Recv)
			if owner == "" || !ast.IsExported(owner) {
				continue
			}
			receiver := owner
			if pointer {
				receiver = "*" + owner
			}
			add(owner+"."+d.Name.Name, "method", "("+receiver+") "+funcSig(d.Type), d.Pos())
		case *ast.GenDecl:
			previous := ""
			for index, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					params := ""
					if s.TypeParams != nil {
						params = "[" + typesOnly(s.TypeParams) + "]"
					}
					alias := ""
					if s.Assign.IsValid() {
						alias = "= "
					}
					switch t := s.Type.(type) {
					case *ast.StructType:
						add(s.Name.Name, "type", params+alias+"struct", s.Pos())
						for _, f := range t.Fields.List {
							tag := ""
							if f.Tag != nil {
								tag = " " + f.Tag.Value
							}
							if len(f.Names) == 0 {
								name := embeddedName(f.Type)
								if ast.IsExported(name) {
									add(s.Name.Name+"."+name, "field", "embedded "+types.ExprString(f.Type)+tag, f.Pos())
								}
							}
							for _, n := range f.Names {
								if n.IsExported() {
									add(s.Name.Name+"."+n.Name, "field", types.ExprString(f.Type)+tag, n.Pos())
								}
							}
						}
					case *ast.InterfaceType:
						embeds := []string{}
						for _, m := range t.Methods.List {
							if len(m.Names) == 0 {
								embeds = append(embeds, types.ExprString(m.Type))
								continue
							}
							ft, ok := m.Type.(*ast.FuncType)
							if !ok {
								continue
							}
							for _, n := range m.Names {
								if n.IsExported() {
									add(s.Name.Name+"."+n.Name, "method", funcSig(ft), n.Pos())
								}
							}
						}
						add(s.Name.Name, "type", params+alias+"interface{"+strings.Join(embeds, "; ")+"}", s.Pos())
					default:
						add(s.Name.Name, "type", params+alias+types.ExprString(s.Type), s.Pos())
					}
				case *ast.ValueSpec:
					kind := "var"
					if d.Tok == token.CONST {
						kind = "const"
					}
					typ := ""
					if s.Type != nil {
						typ = types.ExprString(s.Type) + " "
					}
					for i, n := range s.Names {
						value := ""
						if i < len(s.Values) {
							value = types.ExprString(s.Values[i])
						} else if len(s.Values) == 0 && kind == "const" && previous != "" {
							// An implicit repetition of the block's last expression (iota).
							value = fmt.Sprintf("%s #%d", previous, index)
						}
						if n.IsExported() {
							add(n.Name, kind, strings.TrimSpace(typ+"= "+value), n.Pos())
						}
					}
					if len(s.Values) > 0 {
						previous = types.ExprString(s.Values[len(s.Values)-1])
						if s.Type != nil {
							previous = types.ExprString(s.Type) + " " + previous
						}
					}
				}
			}
		}
	}
}

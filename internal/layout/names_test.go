package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Issue 20 asks for "names that need no alias": two packages of the module
// with one name make every file that uses both rename one of them
// (`catalogstore`, `procavail`, …), and the reader has to learn the alias
// before the code. The stages' packages are named for what they do
// (processors/availchange, query/availapi, ingest/changeworker, …) so that
// no domain package's name is taken twice; these checks keep it so.

const modulePath = "github.com/switchbackhq/switchback"

// aliasedImports returns "file: alias path" for every import of a module
// package under a name other than its own in src (blank and dot imports
// aside: they are not renames).
func aliasedImports(fset *token.FileSet, file string, src []byte) ([]string, error) {
	f, err := parser.ParseFile(fset, file, src, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, im := range f.Imports {
		p, err := strconv.Unquote(im.Path.Value)
		if err != nil {
			return nil, err
		}
		if im.Name == nil || im.Name.Name == "_" || im.Name.Name == "." || !strings.HasPrefix(p, modulePath+"/") {
			continue
		}
		if im.Name.Name != path.Base(p) {
			out = append(out, file+": "+im.Name.Name+" "+strings.TrimPrefix(p, modulePath+"/"))
		}
	}
	return out, nil
}

func TestAliasedImports_FlagsRenamedModuleImportsOnly(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want int
	}{
		{"plain import", `package p; import "` + modulePath + `/internal/catalog"`, 0},
		{"renamed module import", `package p; import catalogstore "` + modulePath + `/internal/catalog"`, 1},
		{"alias equal to the name", `package p; import catalog "` + modulePath + `/internal/catalog"`, 0},
		{"blank and dot imports", `package p; import (_ "` + modulePath + `/a"; . "` + modulePath + `/b")`, 0},
		{"renamed outside the module", `package p; import kafka "github.com/segmentio/kafka-go"`, 0},
		{"two renames", `package p; import (x "` + modulePath + `/query/availapi"; y "` + modulePath + `/processors/availchange")`, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := aliasedImports(token.NewFileSet(), "f.go", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.want {
				t.Errorf("aliasedImports = %v, want %d", got, tt.want)
			}
		})
	}
}

// moduleGoFiles walks the module's Go files, test files included (an alias
// in a test is as hard to read as one in production code).
func moduleGoFiles(t *testing.T, visit func(rel string, src []byte)) int {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "testdata", "bin", "vendor":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		visit(filepath.ToSlash(rel), src)
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestModule_NoImportNeedsAnAlias(t *testing.T) {
	fset := token.NewFileSet()
	var found []string
	files := moduleGoFiles(t, func(rel string, src []byte) {
		got, err := aliasedImports(fset, rel, src)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return
		}
		found = append(found, got...)
	})
	if files < 300 {
		t.Fatalf("walked %d Go files: the check does not see the module", files)
	}
	sort.Strings(found)
	for _, f := range found {
		t.Errorf("aliased import (rename the package so its name says what it does, docs/decisions.md \"Layout\"): %s", f)
	}
}

// TestModule_PackageNamesAreUnique keeps two packages outside bench/ from
// sharing a name (the cause of aliases). bench/'s packages are leaves that
// nothing imports, and every main is alone in its binary.
func TestModule_PackageNamesAreUnique(t *testing.T) {
	byName := map[string][]string{}
	for _, p := range listModuleNames(t) {
		if p.name == "main" || top(p.path) == "bench" {
			continue
		}
		byName[p.name] = append(byName[p.name], p.path)
	}
	if len(byName) < 50 {
		t.Fatalf("found %d package names: the check does not see the module", len(byName))
	}
	for name, paths := range byName {
		if len(paths) > 1 {
			sort.Strings(paths)
			t.Errorf("package name %q is taken by %v: one of them needs another name", name, paths)
		}
	}
}

type namedPkg struct{ path, name string }

// listModuleNames is `go list`'s package name of every package of the
// module, with its module-relative path.
func listModuleNames(t *testing.T) []namedPkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Name", "./...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []namedPkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var l struct{ ImportPath, Name string }
		if err := dec.Decode(&l); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, namedPkg{path: strings.TrimPrefix(strings.TrimPrefix(l.ImportPath, modulePath), "/"), name: l.Name})
	}
	return pkgs
}

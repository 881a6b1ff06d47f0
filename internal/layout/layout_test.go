package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// stages are the top-level folders of the pipeline's stages (README.md,
// "Layout"). A stage may import internal/ and schemas/, never another stage.
var stages = map[string]bool{"ingest": true, "processors": true, "query": true, "dispatcher": true}

// notFromInternal are the top-level folders that no package under internal/
// imports: internal/ is below the stages, and cmd/ and bench/ are above
// everything.
var notFromInternal = map[string]bool{
	"ingest": true, "processors": true, "query": true, "dispatcher": true, "bench": true, "cmd": true,
}

// arrow is one import, as module-relative paths ("query/octo" imports
// "ingest/partner").
type arrow struct{ from, to string }

// rules are the floor plan and the arrows it still allows against itself,
// each with the reason and the change that removes it. An allowed arrow
// that no longer exists is reported too, so the lists only shrink.
type rules struct {
	// internalExceptions are packages under internal/ that may still
	// import a stage, bench/ or cmd/.
	internalExceptions map[string]string
	// stageExceptions are arrows from one stage to another.
	stageExceptions map[arrow]string
}

// today is the floor plan as it stands. Remove an entry with the change
// its reason names: the test fails on a stale one.
var today = rules{
	// None under internal/ since catalogtest's split into a store fixture
	// and query/querytest (issue 20).
	internalExceptions: map[string]string{},
	// None between stages since the availability cache service moved to
	// internal/availcache, the partner's wire model and snapshot payload
	// to schemas/ and the partner call's vocabulary to internal/partnerapi
	// (issue 20).
	stageExceptions: map[arrow]string{},
}

// pkg is one package of the module as `go list` describes it: its
// module-relative path and its non-test imports, also module-relative
// (imports from outside the module left out).
type pkg struct {
	path    string
	imports []string
}

// top is the first folder of a module-relative path ("query" of
// "query/octo"), or the path itself.
func top(p string) string {
	t, _, _ := strings.Cut(p, "/")
	return t
}

// violations checks every import of pkgs against r and returns one line
// per arrow the floor plan forbids, and per exception that no import uses
// any more. Test code is not in pkgs: `go list` without -test reports
// non-test imports only, and tests may import fixtures and bench/.
func violations(pkgs []pkg, r rules) []string {
	var out []string
	usedInternal := map[string]bool{}
	usedStage := map[arrow]bool{}
	for _, p := range pkgs {
		from := top(p.path)
		for _, imp := range p.imports {
			to := top(imp)
			if from == "internal" && notFromInternal[to] {
				if _, ok := r.internalExceptions[p.path]; ok {
					usedInternal[p.path] = true
				} else {
					out = append(out, fmt.Sprintf("%s imports %s: nothing under internal/ imports a stage, bench/ or cmd/", p.path, imp))
				}
			}
			if stages[from] && stages[to] && from != to {
				a := arrow{p.path, imp}
				if _, ok := r.stageExceptions[a]; ok {
					usedStage[a] = true
				} else {
					out = append(out, fmt.Sprintf("%s imports %s: no stage imports another stage", p.path, imp))
				}
			}
			if strings.HasPrefix(p.path, "internal/platform/") && to == "internal" && !strings.HasPrefix(imp, "internal/platform/") {
				out = append(out, fmt.Sprintf("%s imports %s: platform packages (internal/platform/) import no domain package", p.path, imp))
			}
			if to == "bench" && from != "bench" {
				out = append(out, fmt.Sprintf("%s imports %s: no non-test code outside bench/ imports bench/", p.path, imp))
			}
		}
	}
	for p, why := range r.internalExceptions {
		if !usedInternal[p] {
			out = append(out, fmt.Sprintf("exception for %s (%s) is stale: it imports no stage, bench/ or cmd/ any more; remove it", p, why))
		}
	}
	for a, why := range r.stageExceptions {
		if !usedStage[a] {
			out = append(out, fmt.Sprintf("exception %s -> %s (%s) is stale: the import is gone; remove it", a.from, a.to, why))
		}
	}
	sort.Strings(out)
	return out
}

func TestViolations_FlagsEveryForbiddenArrowAndStaleException(t *testing.T) {
	none := rules{}
	tests := []struct {
		name  string
		pkgs  []pkg
		rules rules
		want  []string // substrings, one per expected violation, in sorted order
	}{
		{"clean graph", []pkg{
			{"cmd/switchback/internal/app", []string{"ingest/partner", "query/octo", "internal/platform/stream", "internal/simulators/partnersim"}},
			{"query/octo", []string{"internal/catalog", "schemas"}},
			{"ingest/partner", []string{"ingest/partner/internal/x", "internal/platform/outbound"}},
			{"bench/soak", []string{"bench/internal/demoapi", "query/httpapi"}},
		}, none, nil},
		{"internal imports a stage", []pkg{{"internal/catalog", []string{"query/httpapi"}}}, none,
			[]string{"internal/catalog imports query/httpapi: nothing under internal/"}},
		{"internal imports cmd", []pkg{{"internal/platform/config", []string{"cmd/switchback/internal/app"}}}, none,
			[]string{"internal/platform/config imports cmd/switchback/internal/app"}},
		{"internal imports bench", []pkg{{"internal/demo", []string{"bench/partnersim"}}}, none,
			[]string{"internal/demo imports bench/partnersim: no non-test code outside bench/", "internal/demo imports bench/partnersim: nothing under internal/"}},
		{"platform imports the domain", []pkg{{"internal/platform/views", []string{"internal/platform/stream", "internal/catalog"}}}, none,
			[]string{"internal/platform/views imports internal/catalog: platform packages (internal/platform/) import no domain package"}},
		{"stage imports another stage", []pkg{{"processors/availchange", []string{"ingest/partner"}}}, none,
			[]string{"processors/availchange imports ingest/partner: no stage imports another stage"}},
		{"stage imports bench", []pkg{{"query/octo", []string{"bench/bookingsim"}}}, none,
			[]string{"query/octo imports bench/bookingsim: no non-test code outside bench/"}},
		{"cmd imports bench", []pkg{{"cmd/switchback/internal/demo", []string{"bench/partnersim"}}}, none,
			[]string{"cmd/switchback/internal/demo imports bench/partnersim: no non-test code outside bench/"}},
		{"exceptions allow exactly their arrows", []pkg{
			{"internal/catalog/catalogtest", []string{"query/httpapi", "query/reseller"}},
			{"query/octo", []string{"ingest/partner", "dispatcher"}},
		}, rules{
			internalExceptions: map[string]string{"internal/catalog/catalogtest": "split"},
			stageExceptions:    map[arrow]string{{"query/octo", "ingest/partner"}: "move"},
		}, []string{"query/octo imports dispatcher: no stage imports another stage"}},
		{"an internal exception does not cover bench", []pkg{
			{"internal/catalog/catalogtest", []string{"bench/partnersim"}},
		}, rules{internalExceptions: map[string]string{"internal/catalog/catalogtest": "split"}},
			[]string{"internal/catalog/catalogtest imports bench/partnersim: no non-test code outside bench/"}},
		{"stale exceptions", []pkg{{"internal/catalog/catalogtest", []string{"internal/catalog"}}}, rules{
			internalExceptions: map[string]string{"internal/catalog/catalogtest": "split"},
			stageExceptions:    map[arrow]string{{"query/octo", "ingest/partner"}: "move"},
		}, []string{"exception for internal/catalog/catalogtest (split) is stale", "exception query/octo -> ingest/partner (move) is stale"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkLines(t, violations(tt.pkgs, tt.rules), tt.want)
		})
	}
}

// listModule runs `go list` on the whole module and returns its packages
// with module-relative paths and their module-relative non-test imports.
func listModule(t *testing.T) []pkg {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,Module,Error", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	type listed struct {
		ImportPath string
		Imports    []string
		Module     *struct{ Path string }
		Error      *struct{ Err string }
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var l listed
		if err := dec.Decode(&l); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		if l.Error != nil {
			t.Fatalf("go list: %s: %s", l.ImportPath, l.Error.Err)
		}
		if l.Module == nil || l.Module.Path == "" {
			t.Fatalf("go list: %s has no module", l.ImportPath)
		}
		prefix := l.Module.Path + "/"
		// A package at the module root (none today) is "": outside
		// every folder, so only the bench/ rule applies to it.
		p := pkg{path: strings.TrimPrefix(strings.TrimPrefix(l.ImportPath, l.Module.Path), "/")}
		for _, imp := range l.Imports {
			if r, ok := strings.CutPrefix(imp, prefix); ok {
				p.imports = append(p.imports, r)
			}
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestModule_ImportsFollowTheFloorPlan is the `go list` check of issue
// 20's "done when": no package under internal/ imports a stage, bench/ or
// cmd/; no stage imports another stage; no non-test code outside bench/
// imports bench/ (each with the exceptions of today, listed above).
func TestModule_ImportsFollowTheFloorPlan(t *testing.T) {
	pkgs := listModule(t)
	// The check must see the module, not an empty or partial list: every
	// layer of the floor plan has packages, and they import each other.
	seen := map[string]int{}
	imports := 0
	for _, p := range pkgs {
		seen[top(p.path)]++
		imports += len(p.imports)
	}
	for _, want := range []string{"cmd", "internal", "ingest", "processors", "query", "dispatcher", "bench", "schemas"} {
		if seen[want] == 0 {
			t.Fatalf("go list found no package under %s/ (found %v): the check does not see the module", want, seen)
		}
	}
	if imports < len(pkgs) {
		t.Fatalf("go list found %d module imports among %d packages: the check does not see the imports", imports, len(pkgs))
	}
	for _, v := range violations(pkgs, today) {
		t.Error(v)
	}
}

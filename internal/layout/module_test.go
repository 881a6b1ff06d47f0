package layout

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// walkProduction calls visit with every production .go file of the module
// (not tests, not testdata/ or vendor/, not hidden or _ folders, not a
// nested module such as deploy/check) and its module-relative package
// folder. The function and package bounds both read the module through it,
// so they agree on what production code is.
func walkProduction(t *testing.T, visit func(path, pkg string) error) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if err := walkGoFiles(root, visit); err != nil {
		t.Fatal(err)
	}
}

// walkGoFiles is walkProduction's walk below root.
func walkGoFiles(root string, visit func(path, pkg string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			name := d.Name()
			if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		return visit(path, filepath.ToSlash(rel))
	})
}

func TestWalkGoFiles_VisitsProductionFilesOnly(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"main.go":         "package main",
		"a/a.go":          "package a",
		"a/a_test.go":     "package a",
		"a/b/b.go":        "package b",
		"a/testdata/x.go": "package x",
		"vendor/v/v.go":   "package v",
		".hidden/h.go":    "package h",
		"_skip/s.go":      "package s",
		"nested/go.mod":   "module nested",
		"nested/n.go":     "package n",
		"a/README.md":     "not go",
	}
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	err := walkGoFiles(root, func(path, pkg string) error {
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		got = append(got, pkg+" "+filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a a/a.go", "a/b a/b/b.go", ". main.go"} // lexical order
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("walkGoFiles visited %q, want %q", got, want)
	}
}

// layoutSection is docs/decisions.md's "## Layout (issue 20)" section.
func layoutSection(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../../docs/decisions.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "## Layout (issue 20)")
	if !ok {
		t.Fatal(`docs/decisions.md has no "## Layout (issue 20)" section`)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	return section
}

// docList describes one list that a test and docs/decisions.md's Layout
// section keep alike: the test's entries (name → reason), the regexp of a
// documented entry (groups: name, reason), and how a missing entry is
// written in the document.
type docList struct {
	what    string // the test's list, as named in messages: "longFuncs"
	entry   *regexp.Regexp
	format  string // the document's line for name and reason, as fmt.Sprintf's
	entries map[string]string
}

// mismatches returns one line per entry that the section and l.entries do
// not share with the same reason.
func (l docList) mismatches(section string) []string {
	var out []string
	documented := map[string]string{}
	for _, m := range l.entry.FindAllStringSubmatch(section, -1) {
		documented[m[1]] = m[2]
	}
	for name, why := range l.entries {
		if got, ok := documented[name]; !ok {
			out = append(out, fmt.Sprintf("%s is in %s but not in docs/decisions.md (Layout): add %q", name, l.what, fmt.Sprintf(l.format, name, why)))
		} else if got != why {
			out = append(out, fmt.Sprintf("%s: docs/decisions.md gives the reason %q, %s %q", name, got, l.what, why))
		}
	}
	for name := range documented {
		if _, ok := l.entries[name]; !ok {
			out = append(out, fmt.Sprintf("docs/decisions.md (Layout) lists %s, which %s does not: remove it there", name, l.what))
		}
	}
	sort.Strings(out)
	return out
}

func TestDocList_FlagsMissingDifferingAndExtraEntries(t *testing.T) {
	list := docList{
		what:   "things",
		entry:  regexp.MustCompile("(?m)^  - `([^`]+)`: (.*)\\.$"),
		format: "  - `%s`: %s.",
	}
	tests := []struct {
		name    string
		entries map[string]string
		section string
		want    []string // substrings, one per expected line, in sorted order
	}{
		{"same", map[string]string{"a": "why a"}, "intro\n  - `a`: why a.\n", nil},
		{"missing", map[string]string{"a": "why a", "b": "why b"}, "  - `a`: why a.\n",
			[]string{"b is in things but not in docs/decisions.md"}},
		{"other reason", map[string]string{"a": "why a"}, "  - `a`: because.\n",
			[]string{`a: docs/decisions.md gives the reason "because", things "why a"`}},
		{"extra", nil, "  - `a`: why a.\n",
			[]string{"docs/decisions.md (Layout) lists a, which things does not"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := list
			l.entries = tt.entries
			checkLines(t, l.mismatches(tt.section), tt.want)
		})
	}
}

// checkLines fails t unless got has one line per want, each containing
// its want in order.
func checkLines(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %q, want %d matching %q", got, len(want), want)
	}
	for i := range got {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("line %d = %q, want it to contain %q", i, got[i], want[i])
		}
	}
}

package layout

import (
	"fmt"
	"go/scanner"
	"go/token"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// maxPackageLines is issue 20's bound on a package ("no package over
// ~2,000 non-test lines without a written reason"), counted in code
// lines: lines of the non-test .go files that hold a token other than a
// comment (blank and comment-only lines are left out, so that a package is
// not charged for explaining itself).
const maxPackageLines = 2000

// largePackages are the packages over maxPackageLines of today, each with
// the reason it stays whole (the same list and reasons as
// docs/decisions.md, "Layout (issue 20)", as "  - package `path`:
// reason."). A package cut below the bound makes its entry stale and fails
// the test, so the list only shrinks.
var largePackages = map[string]string{
	"dispatcher":                    "the webhook tier is one state machine over one Redis view: intake, per-subscriber lanes (order, throttle, retry), auto-disable, replay and the deliveries view share its lane table and fencing, and a split would export their internals to each other",
	"internal/catalog/catalogredis": "the catalog's Redis adapter: one Store over one key space, whose writes (the supplier lock, versions, the views' fence), event application (the Lua versioned upserts, replayed in Go by the process's view) and reads (scoped reads, the reseller's stored bytes) share its keys, scripts and lock; a split would export the key layout and the lock to each other",
	"ingest/bookingsystem":          "both dialects of spec doc 3's client (v2 and OCTO) behind one Client, each with its fast parsers; the OCTO wire types leave for their own package (issue 20)",
}

// codeLines counts the lines of src that hold a token other than a
// comment.
func codeLines(src []byte) int {
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, 0) // comments skipped, errors ignored
	lines := map[int]bool{}
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.SEMICOLON && lit == "\n" {
			continue // an inserted semicolon is not a token of the source
		}
		start := fset.Position(pos).Line
		lines[start] = true
		// A raw string spans lines; each of them is code.
		for i := 1; i <= strings.Count(lit, "\n"); i++ {
			lines[start+i] = true
		}
	}
	return len(lines)
}

// packageLines reads the module's production .go files (walkProduction)
// and returns the code lines per module-relative package folder.
func packageLines(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	walkProduction(t, func(path, pkg string) error {
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[pkg] += codeLines(src)
		return nil
	})
	return out
}

// tooLarge returns one line per package over limit without an entry in
// allowed, and per entry that names no package over limit.
func tooLarge(sizes map[string]int, allowed map[string]string, limit int) []string {
	var out []string
	for pkg, n := range sizes {
		if _, ok := allowed[pkg]; n > limit && !ok {
			out = append(out, fmt.Sprintf("package %s has %d code lines (over %d): split it, or add it with its reason to largePackages and docs/decisions.md (Layout)", pkg, n, limit))
		}
	}
	for pkg, why := range allowed {
		if sizes[pkg] <= limit {
			out = append(out, fmt.Sprintf("largePackages entry %s (%s) is stale: it has %d code lines, not over %d; remove it here and in docs/decisions.md", pkg, why, sizes[pkg], limit))
		}
	}
	sort.Strings(out)
	return out
}

func TestCodeLines_CountsLinesWithCodeOnly(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want int
	}{
		{"blank and comment lines", "package p\n\n// doc\n/* block\n comment */\nvar x = 1 // trailing\n", 2},
		{"raw string spans lines", "package p\n\nvar s = `a\nb\nc`\n", 4},
		{"empty", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := codeLines([]byte(tt.src)); got != tt.want {
				t.Fatalf("codeLines = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestTooLarge_FlagsUnlistedLargePackagesAndStaleEntries(t *testing.T) {
	sizes := map[string]int{"a": 10, "b": 3}
	tests := []struct {
		name    string
		allowed map[string]string
		want    []string
	}{
		{"unlisted", nil, []string{"package a has 10 code lines (over 5)"}},
		{"listed", map[string]string{"a": "one machine"}, nil},
		{"stale", map[string]string{"a": "one machine", "b": "was large", "gone": "moved"},
			[]string{"largePackages entry b (was large) is stale", "largePackages entry gone (moved) is stale"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkLines(t, tooLarge(sizes, tt.allowed, 5), tt.want)
		})
	}
}

// TestModule_NoPackageOverTheBoundWithoutAReason is the package half of
// issue 20's bound (the function half is in funclen_test.go).
func TestModule_NoPackageOverTheBoundWithoutAReason(t *testing.T) {
	sizes := packageLines(t)
	if len(sizes) < 50 {
		t.Fatalf("counted %d packages: the check does not see the module", len(sizes))
	}
	for _, v := range tooLarge(sizes, largePackages, maxPackageLines) {
		t.Error(v)
	}
}

// documentedPackage is one package of docs/decisions.md's list of large
// packages: "  - package `path`: reason."
var documentedPackage = regexp.MustCompile("(?m)^  - package `([^`]+)`: (.*)\\.$")

// TestModule_LargePackagesAreTheDocumentedOnes keeps largePackages and
// docs/decisions.md's list the same, reasons included.
func TestModule_LargePackagesAreTheDocumentedOnes(t *testing.T) {
	list := docList{what: "largePackages", entry: documentedPackage, format: "  - package `%s`: %s.", entries: largePackages}
	for _, v := range list.mismatches(layoutSection(t)) {
		t.Error(v)
	}
}

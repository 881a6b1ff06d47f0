// Package metricsource tells the tests of deploy/ which switchback_*
// metrics the code declares, with their label names, by reading the Go
// sources: every `Name: "switchback_..."` of a prometheus *Opts literal, the
// label names of the Vec constructor that closes it, and its ConstLabels.
// The dashboards' and alert rules' tests check each query against it, so a
// panel or an alert on a metric or label that the code does not export
// fails (a metric renamed in the code breaks its dashboard test, not a
// Grafana panel in production).
//
// It reads source text, not a live registry: a metric is declared even
// before its first observation, and no tier needs to run. It must stay a
// test helper: nothing in the service imports it.
package metricsource

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Metric is one declared metric.
type Metric struct {
	Name      string
	Histogram bool     // series carry _bucket, _count and _sum suffixes
	Labels    []string // variable and constant label names
	File      string   // where it is declared, relative to the root
}

var (
	nameField = regexp.MustCompile(`Name:\s*"(switchback_[a-z0-9_]+)"`)
	// The end of the *Opts literal: `}` then `)` (no labels) or
	// `}, []string{...})` (a Vec).
	optsEnd     = regexp.MustCompile(`\}\s*(?:,\s*\[\]string\{([^}]*)\}\s*)?\)`)
	constLabels = regexp.MustCompile(`ConstLabels:\s*prometheus\.Labels\{([^}]*)\}`)
	quoted      = regexp.MustCompile(`"([^"]*)"\s*(:)?`)
)

// Declared reads the non-test .go files under root (skipping hidden
// folders, var/ and deploy/check, a module of its own) and returns the
// metrics they declare, by name.
func Declared(root string) (map[string]Metric, error) {
	out := map[string]Metric{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if path != root && (strings.HasPrefix(n, ".") || n == "var" || n == "testdata" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		src := string(b)
		for _, m := range nameField.FindAllStringSubmatchIndex(src, -1) {
			name := src[m[2]:m[3]]
			rest := src[m[1]:]
			end := optsEnd.FindStringSubmatchIndex(rest)
			if end == nil {
				return fmt.Errorf("%s: metric %s: end of its options not found", rel, name)
			}
			body := rest[:end[0]]
			met := Metric{Name: name, File: rel}
			// The constructor is just before the literal: NewHistogram(Vec)
			// takes HistogramOpts.
			start := max(0, m[0]-200)
			before := src[start:m[0]]
			if i := strings.LastIndex(before, "Opts{"); i >= 0 {
				met.Histogram = strings.HasSuffix(before[:i], "Histogram")
			}
			if end[2] >= 0 {
				for _, q := range quoted.FindAllStringSubmatch(rest[end[2]:end[3]], -1) {
					met.Labels = append(met.Labels, q[1])
				}
			}
			if c := constLabels.FindStringSubmatch(body); c != nil {
				for _, q := range quoted.FindAllStringSubmatch(c[1], -1) {
					if q[2] == ":" { // keys only
						met.Labels = append(met.Labels, q[1])
					}
				}
			}
			sort.Strings(met.Labels)
			if prev, dup := out[name]; dup && !slices.Equal(prev.Labels, met.Labels) {
				return fmt.Errorf("metric %s declared with labels %v in %s and %v in %s", name, prev.Labels, prev.File, met.Labels, rel)
			}
			out[name] = met
		}
		return nil
	})
	return out, err
}

var (
	metricRef = regexp.MustCompile(`\bswitchback_[a-z0-9_]+`)
	grouping  = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	selector  = regexp.MustCompile(`\{([^{}]*)\}`)
	matcher   = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	// label_replace(v, "dst", "replacement", "src", "regex"): dst is a new
	// label of the result. Matched by its four trailing string arguments,
	// since v may hold selectors with quoted values of its own.
	labelReplace = regexp.MustCompile(`"([a-zA-Z_][a-zA-Z0-9_]*)"\s*,\s*"[^"]*"\s*,\s*"[a-zA-Z_][a-zA-Z0-9_]*"\s*,\s*"[^"]*"\s*\)`)
)

// Target labels Prometheus adds to every scraped series.
var targetLabels = []string{"job", "instance"}

// Check returns what is wrong with a PromQL expression against the
// declared metrics: a switchback_* name the code does not declare (a
// histogram's _bucket, _count and _sum series count as its own), and a
// label name in by/without or in a selector's matchers that none of the
// expression's metrics carries (job, instance, le of a histogram's buckets
// and labels made by label_replace excepted). Names of other exporters (up)
// are not checked.
func Check(expr string, declared map[string]Metric) []string {
	var problems []string
	carried := map[string]bool{}
	for _, l := range targetLabels {
		carried[l] = true
	}
	for _, m := range labelReplace.FindAllStringSubmatch(expr, -1) {
		carried[m[1]] = true
	}
	refs := metricRef.FindAllString(expr, -1)
	for _, ref := range refs {
		met, ok := declared[ref]
		if !ok {
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				if base, cut := strings.CutSuffix(ref, suffix); cut {
					if h, found := declared[base]; found && h.Histogram {
						met, ok = h, true
						if suffix == "_bucket" {
							carried["le"] = true
						}
					}
				}
			}
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("%s is not declared by the code", ref))
			continue
		}
		for _, l := range met.Labels {
			carried[l] = true
		}
	}
	if len(refs) == 0 {
		return problems
	}
	var used []string
	for _, g := range grouping.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				used = append(used, l)
			}
		}
	}
	for _, s := range selector.FindAllStringSubmatch(expr, -1) {
		for _, m := range matcher.FindAllStringSubmatch(s[1], -1) {
			used = append(used, m[1])
		}
	}
	for _, l := range used {
		if !carried[l] {
			problems = append(problems, fmt.Sprintf("label %q is on none of %v", l, refs))
		}
	}
	return problems
}

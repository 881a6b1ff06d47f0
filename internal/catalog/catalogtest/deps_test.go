package catalogtest

import (
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLayout_IngestAndProcessorTestsDoNotStartTheQueryTier keeps the
// split of the catalog fixtures true: this package is the store fixture
// and imports no stage, and no test binary of a package under ingest/ or
// processors/ depends on a package under query/ (the HTTP fixture is
// query/querytest). It asks the go command for the test binaries'
// dependencies, with query/channel's as the control that the scan sees a
// query/ dependency where there is one.
func TestLayout_IngestAndProcessorTestsDoNotStartTheQueryTier(t *testing.T) {
	mod := goCmd(t, "list", "-m")
	root := filepath.Dir(goCmd(t, "env", "GOMOD"))
	self := mod + "/internal/catalog/catalogtest"
	control := mod + "/query/channel"
	out := goCmd(t, "-C", root, "list", "-deps", "-test", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}",
		"./ingest/...", "./processors/...", "./internal/catalog/catalogtest", "./query/channel")

	deps := map[string][]string{} // package or test binary: its dependencies
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) > 0 {
			deps[f[0]] = f[1:]
		}
	}
	under := func(pkgs []string, dirs ...string) []string {
		var hit []string
		for _, p := range pkgs {
			for _, d := range dirs {
				if strings.HasPrefix(p, mod+"/"+d+"/") {
					hit = append(hit, p)
				}
			}
		}
		return hit
	}

	if got := under(deps[control+".test"], "query"); len(got) == 0 {
		t.Fatalf("the control %s.test shows no query/ dependency: the scan reads nothing (%d packages listed)", control, len(deps))
	}
	if _, ok := deps[self]; !ok {
		t.Fatalf("%s not listed", self)
	}
	if bad := under(deps[self], "ingest", "processors", "query", "dispatcher", "bench", "cmd"); len(bad) > 0 {
		t.Errorf("%s depends on %v: the store fixture must import no stage", self, bad)
	}
	var checked []string
	for bin, ds := range deps {
		if !strings.HasSuffix(bin, ".test") || len(under([]string{bin}, "ingest", "processors")) == 0 {
			continue
		}
		checked = append(checked, bin)
		if bad := under(ds, "query"); len(bad) > 0 {
			t.Errorf("%s depends on %v: ingest and processor tests set up the catalog with catalogtest, without the query tier", bin, bad)
		}
	}
	slices.Sort(checked)
	// These used the HTTP fixture before the split; each must still be seen.
	for _, p := range []string{"ingest/bookingsync", "ingest/changeworker", "ingest/cronsync", "ingest/supplierbooking",
		"processors/availchange", "processors/catalogchange"} {
		if !slices.Contains(checked, mod+"/"+p+".test") {
			t.Errorf("%s.test not among the test binaries checked: %v", p, checked)
		}
	}
	t.Logf("%d test binaries checked", len(checked))
}

// goCmd runs the go command and returns its trimmed output.
func goCmd(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(string(out))
}

package deploy

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// requires reads the require lines of a go.mod (both forms: one line and
// a block) into module path -> version.
func requires(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	inBlock := false
	for _, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "//")
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "require" && f[1] == "(":
			inBlock = true
		case inBlock && len(f) == 1 && f[0] == ")":
			inBlock = false
		case inBlock && len(f) == 2:
			out[f[0]] = f[1]
		case len(f) == 3 && f[0] == "require":
			out[f[1]] = f[2]
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no require found", path)
	}
	return out
}

// compareSemver compares two module versions (vMAJOR.MINOR.PATCH with an
// optional -prerelease, which pseudo-versions use; +build ignored) as
// semver does: -1, 0 or +1.
func compareSemver(a, b string) int {
	split := func(v string) ([]string, []string) {
		v, _, _ = strings.Cut(strings.TrimPrefix(v, "v"), "+")
		core, pre, _ := strings.Cut(v, "-")
		var preIDs []string
		if pre != "" {
			preIDs = strings.Split(pre, ".")
		}
		return strings.Split(core, "."), preIDs
	}
	num := func(s string) (int, bool) { n, err := strconv.Atoi(s); return n, err == nil }
	ac, ap := split(a)
	bc, bp := split(b)
	for i := 0; i < 3; i++ {
		var x, y int
		if i < len(ac) {
			x, _ = num(ac[i])
		}
		if i < len(bc) {
			y, _ = num(bc[i])
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(ap) == 0 && len(bp) == 0:
		return 0
	case len(ap) == 0:
		return 1 // a release is above its prereleases
	case len(bp) == 0:
		return -1
	}
	for i := 0; i < len(ap) && i < len(bp); i++ {
		x, xn := num(ap[i])
		y, yn := num(bp[i])
		switch {
		case xn && yn && x != y:
			if x < y {
				return -1
			}
			return 1
		case xn != yn: // numeric identifiers sort below alphanumeric ones
			if xn {
				return -1
			}
			return 1
		case !xn && ap[i] != bp[i]:
			return strings.Compare(ap[i], bp[i])
		}
	}
	switch {
	case len(ap) < len(bp):
		return -1
	case len(ap) > len(bp):
		return 1
	}
	return 0
}

func TestCompareSemver(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"v0.22.0", "v0.24.0", -1},
		{"v1.10.0", "v1.9.9", 1},
		{"v1.2.3", "v1.2.3", 0},
		{"v1.2.3-rc.1", "v1.2.3", -1},
		{"v0.0.0-20250730193827-2d320260d730", "v0.0.0-20260721132016-d427ff9ee9ad", -1},
		{"v1.2.3-rc.2", "v1.2.3-rc.10", -1},
		{"v2.0.0+incompatible", "v2.0.0", 0},
	}
	for _, tt := range tests {
		t.Run(tt.a+" vs "+tt.b, func(t *testing.T) {
			if got := compareSemver(tt.a, tt.b); got != tt.want {
				t.Errorf("compareSemver(%s, %s) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

// TestCheckModule_RequiresAtLeastTheRootVersions: `cd deploy/check && go run .`
// fails from a clean clone with "updates to go.mod needed" as soon as the
// root module requires a newer version of a module that check/go.mod lists
// (its replace directive builds against this checkout). Bump the root,
// then run `go mod tidy` in deploy/check. CI also runs it there with
// `go mod tidy -diff`.
func TestCheckModule_RequiresAtLeastTheRootVersions(t *testing.T) {
	root := requires(t, "../go.mod")
	check := requires(t, "check/go.mod")
	for mod, rv := range root {
		cv, ok := check[mod]
		if ok && compareSemver(cv, rv) < 0 {
			t.Errorf("deploy/check/go.mod requires %s %s, the root module %s: run `go mod tidy` in deploy/check", mod, cv, rv)
		}
	}
}

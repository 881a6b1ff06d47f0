package openapi

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func load(t *testing.T) *Documents {
	t.Helper()
	d, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// refs returns every $ref value in v.
func refs(v any) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if s, ok := c.(string); ok && k == "$ref" {
				out = append(out, s)
				continue
			}
			out = append(out, refs(c)...)
		}
	case []any:
		for _, c := range x {
			out = append(out, refs(c)...)
		}
	}
	return out
}

// resolve follows a local JSON pointer in doc.
func resolve(doc map[string]any, ref string) bool {
	var cur any = doc
	for _, seg := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		seg = strings.NewReplacer("~1", "/", "~0", "~").Replace(seg)
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[seg]; !ok {
			return false
		}
	}
	return true
}

func TestLoad_EveryFamilyIsSelfContained(t *testing.T) {
	d := load(t)
	if got := len(d.Families()); got != 7 {
		t.Fatalf("families: %d, want 7", got)
	}
	for _, f := range d.Families() {
		t.Run(f.Name, func(t *testing.T) {
			raw, ok := d.JSON(f.Name)
			if !ok {
				t.Fatal("no JSON document")
			}
			var doc map[string]any
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			if doc["openapi"] != "3.1.0" {
				t.Errorf("openapi = %v, want 3.1.0", doc["openapi"])
			}
			if f.Title == "" || !strings.HasPrefix(f.Title, "Switchback") {
				t.Errorf("title %q", f.Title)
			}
			rs := refs(doc)
			if len(rs) == 0 {
				t.Fatal("no $ref at all: the shared components are not used")
			}
			for _, r := range rs {
				if !strings.HasPrefix(r, "#/components/") {
					t.Errorf("$ref %q does not point into the document's components", r)
				} else if !resolve(doc, r) {
					t.Errorf("$ref %q does not resolve", r)
				}
			}
			// The shared conventions are carried by every family but OCTO's,
			// which speaks OCTO: its own Error (OCTO's error objects), no
			// meta.
			want := []string{"#/components/schemas/Error", "#/components/schemas/Meta"}
			if f.Name == "octo" {
				want = []string{"#/components/schemas/Error", "#/components/parameters/RequestID"}
			}
			for _, want := range want {
				if !resolve(doc, want) {
					t.Errorf("%s missing", want)
				}
			}
		})
	}
}

func TestLoad_JSONAndYAMLAreOneDocument(t *testing.T) {
	d := load(t)
	for _, f := range d.Families() {
		t.Run(f.Name, func(t *testing.T) {
			js, _ := d.JSON(f.Name)
			ys, _ := d.YAML(f.Name)
			var fromJSON, fromYAML any
			if err := json.Unmarshal(js, &fromJSON); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(ys, &fromYAML); err != nil {
				t.Fatal(err)
			}
			// Through JSON once more, so that numbers compare alike.
			b, err := json.Marshal(fromYAML)
			if err != nil {
				t.Fatal(err)
			}
			var again any
			if err := json.Unmarshal(b, &again); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fromJSON, again) {
				t.Error("the JSON and YAML forms differ")
			}
		})
	}
}

func TestLoad_IsDeterministic(t *testing.T) {
	a, b := load(t), load(t)
	for _, f := range a.Families() {
		x, _ := a.JSON(f.Name)
		y, _ := b.JSON(f.Name)
		if string(x) != string(y) {
			t.Errorf("%s: two loads differ", f.Name)
		}
	}
}

func TestLoad_KeepsTheWrittenOrder(t *testing.T) {
	d := load(t)
	raw, _ := d.JSON("reseller")
	s := string(raw)
	// The document opens with openapi, info and servers, and lists 1.3
	// before 1.2 as written (not sorted).
	if i, j := strings.Index(s, `"openapi"`), strings.Index(s, `"info"`); i < 0 || j < i {
		t.Error("openapi is not before info")
	}
	if i, j := strings.Index(s, `"/v1.3/suppliers"`), strings.Index(s, `"/v1.2/suppliers"`); i < 0 || j < i {
		t.Error("/v1.3/suppliers is not before /v1.2/suppliers")
	}
}

func TestBundle_RefusesBrokenReferences(t *testing.T) {
	tests := []struct {
		name, root, want string
	}{
		{"missing component", "paths: {}\nx:\n  $ref: 'components.yaml#/components/schemas/Nope'\n", "does not exist"},
		{"unknown file", "x:\n  $ref: 'other.yaml#/components/schemas/Error'\n", "not a shared file"},
		{"not a component", "x:\n  $ref: 'components.yaml#/components'\n", "not /components/<kind>/<name>"},
		{"collision", "x:\n  $ref: 'components.yaml#/components/schemas/Meta'\ncomponents:\n  schemas:\n    Meta:\n      type: string\n", "collides"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := map[string]*yaml.Node{}
			for _, name := range shared {
				raw, err := Source(name)
				if err != nil {
					t.Fatal(err)
				}
				var n yaml.Node
				if err := yaml.Unmarshal(raw, &n); err != nil {
					t.Fatal(err)
				}
				src[name] = n.Content[0]
			}
			var n yaml.Node
			if err := yaml.Unmarshal([]byte(tt.root), &n); err != nil {
				t.Fatal(err)
			}
			src["root.yaml"] = n.Content[0]
			_, err := bundle("root.yaml", src)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one saying %q", err, tt.want)
			}
		})
	}
}

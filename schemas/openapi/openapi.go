// Package openapi holds the API contract: one OpenAPI 3.1 document per API
// family, written by hand in YAML beside this file and embedded in the
// binary. The conventions every family shares (credentials, X-Request-ID,
// the error object, meta, paging, the error responses) are defined once in
// components.yaml, the catalog's resources in catalog.yaml; the family
// documents reference them ("components.yaml#/components/schemas/Error").
//
// Load bundles each family into one self-contained document: the shared
// components it uses, and only those, are copied under its own components
// and the references rewritten to point there. That is what the API
// serves (/openapi/{family}.json and .yaml, query/apidocs) and what the
// tests validate exchanges against (internal/contract), so a client, the
// reference page and the tests read the same contract.
//
// It must not hold behaviour: the documents describe what the handlers of
// query/ do; their tests prove the two agree.
package openapi

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The documents and the shared files, embedded. redocly.yaml (the lint
// configuration) is not part of the contract.
//
//go:embed reseller.yaml channel.yaml registry.yaml operator.yaml admin.yaml octo.yaml discovery.yaml components.yaml catalog.yaml
var files embed.FS

// families are the API families in the order the reference pages list
// them: the file of each is <name>.yaml.
var families = []string{"reseller", "channel", "registry", "operator", "admin", "octo", "discovery"}

// shared are the files of shared components a document may reference.
var shared = []string{"components.yaml", "catalog.yaml"}

// Family is one API family's document.
type Family struct {
	// Name is the family ("reseller"): the document is <Name>.yaml and is
	// served at /openapi/<Name>.json.
	Name string
	// Title is the document's info.title.
	Title string
}

// Documents are the bundled documents of every family.
type Documents struct {
	families []Family
	json     map[string][]byte
	yaml     map[string][]byte
}

// Load bundles every family's document. It fails only on a defect of the
// embedded files (a reference to a missing component, two components of
// one name), which the package's tests rule out.
func Load() (*Documents, error) {
	src := make(map[string]*yaml.Node, len(families)+len(shared))
	for _, name := range append(slices.Clone(shared), fileNames()...) {
		raw, err := files.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			return nil, fmt.Errorf("parse %s: %w", name, err)
		}
		if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s: not a YAML mapping", name)
		}
		src[name] = doc.Content[0]
	}
	d := &Documents{json: map[string][]byte{}, yaml: map[string][]byte{}}
	for _, fam := range families {
		root, err := bundle(fam+".yaml", src)
		if err != nil {
			return nil, err
		}
		js, err := toJSON(root)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fam, err)
		}
		var ys bytes.Buffer
		enc := yaml.NewEncoder(&ys)
		enc.SetIndent(2)
		if err := enc.Encode(root); err != nil {
			return nil, fmt.Errorf("%s: encode YAML: %w", fam, err)
		}
		if err := enc.Close(); err != nil {
			return nil, fmt.Errorf("%s: encode YAML: %w", fam, err)
		}
		d.json[fam], d.yaml[fam] = js, ys.Bytes()
		d.families = append(d.families, Family{Name: fam, Title: scalarAt(root, "info", "title")})
	}
	return d, nil
}

// Families lists the families in their reference order.
func (d *Documents) Families() []Family { return slices.Clone(d.families) }

// JSON is the bundled document of the family, indented JSON.
func (d *Documents) JSON(family string) ([]byte, bool) { b, ok := d.json[family]; return b, ok }

// YAML is the bundled document of the family as YAML.
func (d *Documents) YAML(family string) ([]byte, bool) { b, ok := d.yaml[family]; return b, ok }

// Source is the embedded YAML file as written (a family's document or a
// shared file), for tests and tools.
func Source(name string) ([]byte, error) { return files.ReadFile(name) }

func fileNames() []string {
	out := make([]string, len(families))
	for i, f := range families {
		out[i] = f + ".yaml"
	}
	return out
}

// component names one component of a file: components/<kind>/<name>.
type component struct{ file, kind, name string }

// bundle copies the root document and rewrites every reference to a shared
// file into a reference to its own components, copying the referenced
// components (and what they reference, transitively) in.
func bundle(rootFile string, src map[string]*yaml.Node) (*yaml.Node, error) {
	root := copyNode(src[rootFile])
	var queue []component
	seen := map[component]bool{}
	// rewrite turns the $ref values of n (read from file) into references
	// of the bundled document, queueing the components they point to.
	rewrite := func(n *yaml.Node, file string) error {
		return walkRefs(n, func(ref *yaml.Node) error {
			target, pointer, ok := strings.Cut(ref.Value, "#")
			if !ok {
				return fmt.Errorf("%s: $ref %q has no JSON pointer", file, ref.Value)
			}
			if target == "" {
				target = file
			}
			if target == rootFile {
				if target != file {
					return fmt.Errorf("%s: $ref %q points back into the root document", file, ref.Value)
				}
				return nil // the root's own components stay where they are
			}
			if !slices.Contains(shared, target) {
				return fmt.Errorf("%s: $ref %q: %s is not a shared file", file, ref.Value, target)
			}
			c, err := parsePointer(target, pointer)
			if err != nil {
				return fmt.Errorf("%s: $ref %q: %w", file, ref.Value, err)
			}
			ref.Value = "#/components/" + c.kind + "/" + escapePointer(c.name)
			ref.Style = 0
			if !seen[c] {
				seen[c] = true
				queue = append(queue, c)
			}
			return nil
		})
	}
	if err := rewrite(root, rootFile); err != nil {
		return nil, err
	}
	comps := mapValue(root, "components")
	if comps == nil {
		comps = &yaml.Node{Kind: yaml.MappingNode}
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "components"}, comps)
	}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		def := mapValue(mapValue(mapValue(src[c.file], "components"), c.kind), c.name)
		if def == nil {
			return nil, fmt.Errorf("%s: component %s/%s of %s does not exist", rootFile, c.kind, c.name, c.file)
		}
		def = copyNode(def)
		if err := rewrite(def, c.file); err != nil {
			return nil, err
		}
		kind := mapValue(comps, c.kind)
		if kind == nil {
			kind = &yaml.Node{Kind: yaml.MappingNode}
			comps.Content = append(comps.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: c.kind}, kind)
		}
		if have := mapValue(kind, c.name); have != nil {
			// The root may name a shared component under its own name (the
			// security schemes must be declared in the root document): that
			// entry is a reference to itself once rewritten, and becomes
			// the component. Anything else is two components of one name.
			if !isRefTo(have, "#/components/"+c.kind+"/"+escapePointer(c.name)) {
				return nil, fmt.Errorf("%s: component %s/%s of %s collides with one of the same name", rootFile, c.kind, c.name, c.file)
			}
			*have = *def
			continue
		}
		kind.Content = append(kind.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: c.name}, def)
	}
	return root, nil
}

// parsePointer reads /components/<kind>/<name>, the only place a shared
// file may be pointed into.
func parsePointer(file, pointer string) (component, error) {
	parts := strings.Split(strings.TrimPrefix(pointer, "/"), "/")
	if !strings.HasPrefix(pointer, "/") || len(parts) != 3 || parts[0] != "components" {
		return component{}, fmt.Errorf("pointer %q is not /components/<kind>/<name>", pointer)
	}
	r := strings.NewReplacer("~1", "/", "~0", "~")
	return component{file: file, kind: r.Replace(parts[1]), name: r.Replace(parts[2])}, nil
}

func escapePointer(s string) string { return strings.NewReplacer("~", "~0", "/", "~1").Replace(s) }

// walkRefs calls f with the value node of every "$ref" key under n.
func walkRefs(n *yaml.Node, f func(*yaml.Node) error) error {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "$ref" && v.Kind == yaml.ScalarNode {
				if err := f(v); err != nil {
					return err
				}
				continue
			}
			if err := walkRefs(v, f); err != nil {
				return err
			}
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, c := range n.Content {
			if err := walkRefs(c, f); err != nil {
				return err
			}
		}
	case yaml.AliasNode:
		return fmt.Errorf("line %d: YAML aliases are not used in the API documents", n.Line)
	}
	return nil
}

func isRefTo(n *yaml.Node, ref string) bool {
	return n.Kind == yaml.MappingNode && len(n.Content) == 2 && n.Content[0].Value == "$ref" && n.Content[1].Value == ref
}

// mapValue is the value of key in the mapping m, nil when absent.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func scalarAt(m *yaml.Node, keys ...string) string {
	for _, k := range keys {
		m = mapValue(m, k)
	}
	if m == nil {
		return ""
	}
	return m.Value
}

func copyNode(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, x := range n.Content {
		c.Content[i] = copyNode(x)
	}
	return &c
}

// toJSON writes the node tree as indented JSON, keeping the order of the
// keys as written (paths, properties and examples read in their order).
func toJSON(n *yaml.Node) ([]byte, error) {
	var compact bytes.Buffer
	if err := writeJSON(&compact, n); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("indent JSON: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func writeJSON(b *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		keys := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.Value == "<<" {
				return fmt.Errorf("line %d: keys must be plain strings", k.Line)
			}
			if keys[k.Value] {
				return fmt.Errorf("line %d: duplicate key %q", k.Line, k.Value)
			}
			keys[k.Value] = true
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeString(b, k.Value); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := writeJSON(b, n.Content[i+1]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, c); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		return writeScalar(b, n)
	default:
		return fmt.Errorf("line %d: unsupported YAML node (kind %d)", n.Line, n.Kind)
	}
	return nil
}

func writeScalar(b *bytes.Buffer, n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!str", "!!timestamp", "!!binary":
		return writeString(b, n.Value)
	case "!!null":
		b.WriteString("null")
	case "!!bool":
		var v bool
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		b.WriteString(strconv.FormatBool(v))
	case "!!int":
		var v int64
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		b.WriteString(strconv.FormatInt(v, 10))
	case "!!float":
		var v float64
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		raw, err := json.Marshal(v) // fails for NaN and infinities, which JSON has not
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		b.Write(raw)
	default:
		return fmt.Errorf("line %d: unsupported YAML tag %s", n.Line, n.ShortTag())
	}
	return nil
}

func writeString(b *bytes.Buffer, s string) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1) // the encoder's newline
	return nil
}

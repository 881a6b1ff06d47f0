package contract

import (
	"bytes"
	"encoding/json"
	"io"
)

// duplicateKeys returns the keys that appear twice in one object of a JSON
// body (encoding/json keeps the last silently; strict parsers refuse the
// body). A body that is not JSON has none: the schema check reports it.
func duplicateKeys(body []byte) []string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || (body[0] != '{' && body[0] != '[') {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	type frame struct {
		object  bool
		keys    map[string]bool
		wantKey bool // in an object, the next string token is a key
	}
	var stack []*frame
	var dups []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return dups
		}
		if err != nil {
			return dups
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if top != nil && top.object {
					top.wantKey = true // this value done once it closes
				}
				stack = append(stack, &frame{object: t == '{', keys: map[string]bool{}, wantKey: t == '{'})
			case '}', ']':
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.object && top.wantKey {
				if top.keys[t] {
					dups = append(dups, t)
				}
				top.keys[t] = true
				top.wantKey = false
				continue
			}
			if top != nil && top.object {
				top.wantKey = true
			}
		default:
			if top != nil && top.object {
				top.wantKey = true
			}
		}
	}
}

package testharness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// DuplicateKey returns the path of the first object key that appears twice
// in the same object of the JSON document body ("$.meta", "$.items[2].id"),
// or "" when there is none. encoding/json keeps the last of two keys
// silently; strict parsers refuse the document, so no answer of the API
// may have one. A body that is not JSON is reported with the decoder's
// error as the path.
func DuplicateKey(body []byte) string {
	if len(bytes.TrimSpace(body)) == 0 {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	path, err := dupValue(dec, "$")
	if err != nil {
		return "not JSON: " + err.Error()
	}
	return path
}

// dupValue reads one value at path and returns the path of a duplicate
// key inside it.
func dupValue(dec *json.Decoder, path string) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return "", nil
	}
	switch d {
	case '{':
		seen := map[string]bool{}
		found := ""
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return "", err
			}
			key, ok := k.(string)
			if !ok {
				return "", fmt.Errorf("object key %v", k)
			}
			p := path + "." + key
			if seen[key] && found == "" {
				found = p
			}
			seen[key] = true
			inner, err := dupValue(dec, p)
			if err != nil {
				return "", err
			}
			if found == "" {
				found = inner
			}
		}
		_, err := dec.Token() // '}'
		return found, err
	case '[':
		found := ""
		for i := 0; dec.More(); i++ {
			inner, err := dupValue(dec, path+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return "", err
			}
			if found == "" {
				found = inner
			}
		}
		_, err := dec.Token() // ']'
		return found, err
	}
	return "", errors.New("unexpected delimiter")
}

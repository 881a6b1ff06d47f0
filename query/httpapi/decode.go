package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/switchbackhq/switchback/query/apierror"
)

// DecodeJSON decodes a request body into v, strictly: one JSON value, no
// unknown fields, no trailing data. Its errors are *apierror.Error values
// that name the problem, so a handler can return them as they are:
//
//   - MALFORMED_JSON (400): empty body, syntax error (data.offset), a body
//     that is not an object, trailing data;
//   - INVALID_FIELD (400): unknown field, a value of the wrong type, or a
//     value its type refuses (a time that is not RFC 3339, say) (data.field,
//     the path as spelled in JSON: "valid.from", "items[2].startTime").
//
// Unknown fields are refused rather than ignored so that a misspelled
// field ("chanelId") fails loudly instead of being silently dropped.
func DecodeJSON(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return apierror.New(apierror.MalformedJSON, "request body is empty; a JSON object is expected")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if e := invalidValue(body, v, err); e != nil {
			return e
		}
		return decodeError(err, len(body))
	}
	rest := body[dec.InputOffset():]
	if trimmed := bytes.TrimLeft(rest, " \t\r\n"); len(trimmed) > 0 {
		return malformedAt(int64(len(body)-len(trimmed)), "unexpected data after the JSON value")
	}
	return nil
}

func decodeError(err error, bodyLen int) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var inv *json.InvalidUnmarshalError
	switch {
	case errors.As(err, &syn):
		// Offset counts the bytes read, the offending one included.
		return malformedAt(max(syn.Offset-1, 0), strings.TrimPrefix(syn.Error(), "json: "))
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return malformedAt(int64(bodyLen), "unexpected end of JSON input")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return malformedAt(typ.Offset, fmt.Sprintf("the body must be %s, not %s", jsonKind(typ.Type.Kind().String()), typ.Value))
		}
		e := apierror.New(apierror.InvalidField, fmt.Sprintf("field %s must be %s, not %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value))
		e.Data = map[string]string{"field": typ.Field, "offset": strconv.FormatInt(typ.Offset, 10)}
		return e
	case errors.As(err, &inv):
		// A handler passed a non-pointer: a bug, not the client's fault.
		return fmt.Errorf("decode request body: %w", err)
	}
	// encoding/json has no typed error for an unknown field.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name, _ = strconv.Unquote(name)
		e := apierror.New(apierror.InvalidField, fmt.Sprintf("unknown field %q", name))
		e.Data = map[string]string{"field": name}
		return e
	}
	return apierror.New(apierror.MalformedJSON, "malformed JSON: "+strings.TrimPrefix(err.Error(), "json: "))
}

// malformedAt reports a problem at a 0-based byte offset of the body.
func malformedAt(off int64, what string) error {
	e := apierror.New(apierror.MalformedJSON, fmt.Sprintf("malformed JSON at offset %d: %s", off, what))
	e.Data = map[string]string{"offset": strconv.FormatInt(off, 10)}
	return e
}

// jsonKind names a Go kind as a JSON type, for messages.
func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "struct", "map":
		return "an object"
	case "slice", "array":
		return "an array"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	}
	return "a " + goKind
}

// invalidValue explains an error that a value's own decoding returned
// (a json.Unmarshaler such as time.Time refusing "soon"): encoding/json
// says neither which field nor anything but the type's own message (for a
// time, a Go layout string). The body is walked again beside the target's
// type to find the first value its type refuses: INVALID_FIELD naming it.
// nil when err is of another kind or no such value is found.
func invalidValue(body []byte, v any, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var inv *json.InvalidUnmarshalError
	if errors.As(err, &syn) || errors.As(err, &typ) || errors.As(err, &inv) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || strings.HasPrefix(err.Error(), "json: unknown field ") {
		return nil
	}
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	field, verr, ok := refused(dec, t.Elem(), "")
	if !ok || field == "" {
		return nil
	}
	reason := "has a value that is not valid"
	var pe *time.ParseError
	if errors.As(verr, &pe) {
		reason = "must be an RFC 3339 date-time (2006-01-02T15:04:05Z)"
	}
	e := apierror.New(apierror.InvalidField, fmt.Sprintf("field %s %s", field, reason))
	e.Data = map[string]string{"field": field}
	return e
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// refused reads the next value of dec as a value of type t at path and
// returns the path of the first value inside it that its type's
// UnmarshalJSON refuses, with the refusal (ok false: the body could not
// be walked, or nothing was refused).
func refused(dec *json.Decoder, t reflect.Type, path string) (string, error, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return "", nil, false
		}
		if string(raw) == "null" {
			return "", nil, false
		}
		if err := json.Unmarshal(raw, reflect.New(t).Interface()); err != nil {
			return path, err, true
		}
		return "", nil, false
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		tok, err := dec.Token()
		if err != nil {
			return "", nil, false
		}
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			return "", nil, false // a scalar or an array: a type error, reported by the decoder
		}
		fields := jsonFields(t)
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return "", nil, false
			}
			key, _ := k.(string)
			sub := path + "." + key
			if path == "" {
				sub = key
			}
			var ft reflect.Type
			if t.Kind() == reflect.Map {
				ft = t.Elem()
			} else if f, ok := fields[key]; ok {
				ft = f
			} else if f, ok := fields[strings.ToLower(key)]; ok {
				ft = f
			}
			if ft == nil {
				var skip json.RawMessage
				if dec.Decode(&skip) != nil {
					return "", nil, false
				}
				continue
			}
			if p, e, ok := refused(dec, ft, sub); ok {
				return p, e, true
			}
		}
		_, _ = dec.Token()
		return "", nil, false
	case reflect.Slice, reflect.Array:
		tok, err := dec.Token()
		if err != nil {
			return "", nil, false
		}
		if d, ok := tok.(json.Delim); !ok || d != '[' {
			return "", nil, false
		}
		for i := 0; dec.More(); i++ {
			if p, e, ok := refused(dec, t.Elem(), path+"["+strconv.Itoa(i)+"]"); ok {
				return p, e, true
			}
		}
		_, _ = dec.Token()
		return "", nil, false
	}
	var skip json.RawMessage
	_ = dec.Decode(&skip)
	return "", nil, false
}

// jsonFields are the JSON names of a struct's fields (embedded structs'
// promoted, as encoding/json does), each also under its lower-case
// spelling (encoding/json matches names case-insensitively).
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	if t.Kind() != reflect.Struct {
		return out
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			et := ft
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for k, v := range jsonFields(et) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = ft
		if _, ok := out[strings.ToLower(name)]; !ok {
			out[strings.ToLower(name)] = ft
		}
	}
	return out
}

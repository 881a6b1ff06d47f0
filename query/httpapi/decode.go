package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/switchbackhq/switchback/query/apierror"
)

// DecodeJSON decodes a request body into v, strictly: one JSON value, no
// unknown fields, no trailing data. Its errors are *apierror.Error values
// that name the problem, so a handler can return them as they are:
//
//   - MALFORMED_JSON (400): empty body, syntax error (data.offset), a body
//     that is not an object, trailing data;
//   - INVALID_FIELD (400): unknown field or a value of the wrong type
//     (data.field, the dotted path as spelled in JSON).
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

package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/switchbackhq/switchback/schemas"
)

// ErrInvalidPayload means a notification's payload is not a JSON object, so
// no webhook body can be built from it. Sending it again cannot help.
var ErrInvalidPayload = errors.New("webhook: payload is not a JSON object")

var signatureField = []byte(`"signature"`)

// Body returns the webhook body of n: the fields of n.Payload and the
// signature object, as one flat JSON object (spec doc 1, "Webhook
// payloads": the type's fields, then signature).
func Body(n schemas.Notification, sig schemas.Signature) ([]byte, error) {
	return AppendBody(nil, n.Payload, sig)
}

// AppendBody appends the webhook body built from payload and sig to dst.
// The payload's bytes are copied as they are (no decode and re-encode) and
// the signature appended as the last member, so that the common case costs
// one validation pass and one copy. A "signature" member already present in
// the payload is replaced, never duplicated.
func AppendBody(dst []byte, payload json.RawMessage, sig schemas.Signature) ([]byte, error) {
	p := bytes.TrimSpace(payload)
	if len(p) < 2 || p[0] != '{' || p[len(p)-1] != '}' || !json.Valid(p) {
		return dst, ErrInvalidPayload
	}
	if bytes.Contains(p, signatureField) {
		// Rare: re-encode without it (a string value containing the word
		// takes this path too, harmlessly).
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(p, &fields); err != nil {
			return dst, fmt.Errorf("%w: %v", ErrInvalidPayload, err)
		}
		delete(fields, "signature")
		var err error
		if p, err = json.Marshal(fields); err != nil {
			return dst, fmt.Errorf("%w: %v", ErrInvalidPayload, err)
		}
	}
	inner := bytes.TrimSpace(p[1 : len(p)-1])
	dst = append(dst, '{')
	dst = append(dst, inner...)
	if len(inner) > 0 {
		dst = append(dst, ',')
	}
	dst = append(dst, `"signature":{"sum":`...)
	dst = appendString(dst, sig.Sum)
	dst = append(dst, `,"timestamp":`...)
	dst = strconv.AppendInt(dst, sig.Timestamp, 10)
	dst = append(dst, `,"token":`...)
	dst = appendString(dst, sig.Token)
	dst = append(dst, "}}"...)
	return dst, nil
}

// appendString appends s as a JSON string. Sums and tokens are hex, which
// needs no escaping; anything else goes through encoding/json.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x7f || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always marshals
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

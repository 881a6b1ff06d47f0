package partner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/internal/platform/domainerr"
	"github.com/switchbackhq/switchback/internal/platform/remotecall"
)

// Domain errors of the write calls (holds and bookings): spec doc 2 lists
// 409 and 413 for POST /holds and /bookings without saying when; the
// reseller sees the code and this message only.
var (
	// ErrConflict: the partner answered 409 (CONFLICT).
	ErrConflict = domainerr.New("CONFLICT", "the supplier's system refused the request as conflicting")
	// ErrTooLarge: the partner answered 413 (PAYLOAD_TOO_LARGE).
	ErrTooLarge = domainerr.New("PAYLOAD_TOO_LARGE", "the supplier's system refused the request as too large")
)

// call is one partner call of any method: what send needs.
type call struct {
	op     string // metrics label and log name: "createHold", ...
	method string
	url    string
	reqID  string
	body   []byte // JSON request body; nil for none
	ok     []int  // success statuses
	// parse reads a success answer (nil: the body is ignored).
	parse func(status int, body []byte) error
}

// send runs one write call (holds, bookings) through the partner's
// breaker: as do, plus the statuses spec doc 2 lists for POST /holds and
// /bookings without saying when (409, 413: the partner working correctly,
// not counted against its breaker). 200 where another success was
// expected is still the partner's success (doc 2 lists "a 200 without
// body" for cancel).
func (c *Client) send(ctx context.Context, conn Connection, in call) (int, error) {
	rc := remoteCall(conn, in)
	rc.Statuses = map[int]error{fasthttp.StatusConflict: ErrConflict, fasthttp.StatusRequestEntityTooLarge: ErrTooLarge}
	status, ce := c.base.Do(ctx, rc)
	if ce != nil {
		return status, ce
	}
	return status, nil
}

// remoteCall is in as remotecall makes it: credentials and X-Request-ID
// as headers, the breaker of the partner's base URL.
func remoteCall(conn Connection, in call) remotecall.Call {
	return remotecall.Call{Op: in.op, Method: in.method, URL: in.url, System: conn.BaseURL,
		Header: func(h *fasthttp.RequestHeader) {
			h.Set("X-API-Key", conn.APIKey)
			h.Set("X-API-Secret", conn.APISecret)
			if in.reqID != "" {
				h.Set("X-Request-ID", in.reqID)
			}
		},
		Body: in.body, OK: in.ok, Parse: in.parse}
}

// partnerURL joins the connection's base URL and the path segments, each
// escaped.
func partnerURL(base string, segments ...string) (string, error) {
	b, err := url.Parse(base)
	if err != nil || (b.Scheme != "http" && b.Scheme != "https") || b.Host == "" {
		return "", errors.New("connection baseUrl is not an http(s) URL")
	}
	var sb strings.Builder
	sb.WriteString(strings.TrimSuffix(b.String(), "/"))
	for _, s := range segments {
		sb.WriteByte('/')
		sb.WriteString(url.PathEscape(s))
	}
	return sb.String(), nil
}

// decodeAnswer reads {"<key>": {...}, "meta": {"reqId": ...}} strictly: one
// JSON object, meta.reqId echoing reqID (when not empty), key present.
// Unknown fields are ignored (partners may add fields), trailing data is
// not.
func decodeAnswer(body []byte, key, reqID string, into any) error {
	if len(body) > MaxResponseBytes {
		return fmt.Errorf("%w: body of %d bytes", ErrMalformed, len(body))
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data", ErrMalformed)
	}
	var meta rawMeta
	if m, ok := raw["meta"]; !ok || json.Unmarshal(m, &meta) != nil || meta.ReqID == nil {
		return fmt.Errorf("%w: no meta.reqId", ErrMalformed)
	}
	if reqID != "" && *meta.ReqID != reqID {
		return fmt.Errorf("%w: meta.reqId does not echo X-Request-ID", ErrMalformed)
	}
	v, ok := raw[key]
	if !ok || string(v) == "null" {
		return fmt.Errorf("%w: no %s", ErrMalformed, key)
	}
	if err := json.Unmarshal(v, into); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrMalformed, key, err)
	}
	return nil
}

// encodeRequest builds {"<key>": v, "meta": {"reqId": reqID}}.
func encodeRequest(key string, v any, reqID string) ([]byte, error) {
	b, err := json.Marshal(map[string]any{key: v, "meta": map[string]string{"reqId": reqID}})
	if err != nil {
		return nil, fmt.Errorf("encode %s request: %w", key, err)
	}
	return b, nil
}

package partner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/internal/domainerr"
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

// send runs one call through the partner's breaker, like do does for the
// availability reads: credentials and X-Request-ID as headers, the
// timeout (shortened by ctx's deadline), the latency and error metrics by
// op, and the partner's status mapped to a domain error. A 4xx other than
// 401/403 is the partner working correctly and does not count against its
// breaker.
func (c *Client) send(ctx context.Context, conn Connection, in call) (int, error) {
	if ce := c.refuse(in.url); ce != nil {
		return 0, ce
	}
	br := c.breakers.Get(conn.BaseURL)
	if !br.Allow(c.opts.Clock()) {
		c.metrics.errors.WithLabelValues(KindBreaker).Inc()
		return 0, &CallError{Kind: KindBreaker, domain: ErrUnavailable}
	}
	timeout := c.opts.Timeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		br.Done(c.opts.Clock(), true)
		c.metrics.errors.WithLabelValues(KindTimeout).Inc()
		return 0, &CallError{Kind: KindTimeout, domain: ErrUnavailable, cause: context.DeadlineExceeded}
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(in.url)
	req.Header.SetMethod(in.method)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-API-Key", conn.APIKey)
	req.Header.Set("X-API-Secret", conn.APISecret)
	if in.reqID != "" {
		req.Header.Set("X-Request-ID", in.reqID)
	}
	if in.body != nil {
		req.Header.SetContentType("application/json")
		req.SetBody(in.body)
	}
	start := time.Now()
	err := c.http.DoTimeout(req, resp, timeout)
	c.metrics.seconds.WithLabelValues(in.op).Observe(time.Since(start).Seconds())
	status := resp.StatusCode()
	ce := classifyWrite(err, status, in.ok)
	if ce == nil && in.parse != nil {
		if perr := in.parse(status, resp.Body()); perr != nil {
			ce = &CallError{Kind: KindMalformed, Status: status, domain: ErrUnavailable, cause: perr}
		}
	}
	br.Done(c.opts.Clock(), ce != nil && ce.domain == ErrUnavailable && ce.Kind != KindRefused)
	if ce != nil {
		c.metrics.errors.WithLabelValues(ce.Kind).Inc()
		return status, ce
	}
	return status, nil
}

func classifyWrite(err error, status int, ok []int) *CallError {
	if err != nil {
		return classify(err, status)
	}
	switch {
	case slices.Contains(ok, status):
		return nil
	case status == fasthttp.StatusConflict:
		return &CallError{Kind: KindStatus, Status: status, domain: ErrConflict}
	case status == fasthttp.StatusRequestEntityTooLarge:
		return &CallError{Kind: KindStatus, Status: status, domain: ErrTooLarge}
	case status == fasthttp.StatusOK:
		// 200 where another success was expected: still the partner's
		// success (spec doc 2 lists "a 200 without body" for cancel).
		return nil
	}
	return classify(nil, status)
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

// Package availapi serves the reseller availability reads of spec doc
// 2 (GET .../availabilities and .../availability, v1.2 and v1.3) from the
// availability cache (internal/availcache): it checks the request's
// parameters, reads the cache as the reseller's channel sees it and writes
// the answer (the list from the cached arrays, without decoding them).
//
// It must not cache, call partners or publish: internal/availcache does.
package availapi

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/switchbackhq/switchback/internal/availcache"
	"github.com/switchbackhq/switchback/internal/platform/jsonwire"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/schemas"
)

// Path parameters (spec doc 2 spelling; the same names as query/reseller,
// which the router requires for routes sharing a prefix).
const (
	pSupplier = "supplier_id"
	pProduct  = "product_id"
)

var resellerOnly = []principals.Role{principals.RoleReseller}

// Register adds GET .../availabilities and .../availability under /v1.2
// and /v1.3 (the spec does not show v1.3 shapes: they are the v1.2 ones).
func Register(s *httpapi.Server, svc *availcache.Service) {
	h := handlers{svc: svc}
	const prod = "/suppliers/{" + pSupplier + "}/products/{" + pProduct + "}"
	for _, base := range []string{httpapi.BaseResellerV12, httpapi.BaseResellerV13} {
		g := s.Group(base)
		g.Handle(http.MethodGet, prod+"/availabilities", resellerOnly, h.handleList)
		g.Handle(http.MethodGet, prod+"/availability", resellerOnly, h.handleOne)
	}
}

// handlers answers the reads from the cache.
type handlers struct{ svc *availcache.Service }

// window is a list read's [start, end), to the second.
type window struct{ start, end time.Time }

// parseWindow reads start and end (RFC 3339, both required, start before
// end, at most maxWindow apart). Errors name the parameter (400
// INVALID_FIELD with data.field).
func parseWindow(start, end string, maxWindow time.Duration) (window, error) {
	var w window
	if start == "" {
		return w, apierror.Invalid("start", "is required (RFC 3339)")
	}
	if end == "" {
		return w, apierror.Invalid("end", "is required (RFC 3339)")
	}
	st, err := time.Parse(time.RFC3339, start)
	if err != nil {
		return w, apierror.Invalid("start", "must be an RFC 3339 time")
	}
	en, err := time.Parse(time.RFC3339, end)
	if err != nil {
		return w, apierror.Invalid("end", "must be an RFC 3339 time")
	}
	st, en = st.UTC().Truncate(time.Second), en.UTC().Truncate(time.Second)
	if !st.Before(en) {
		return w, apierror.Invalid("end", "must be after start")
	}
	if en.Sub(st) > maxWindow {
		return w, apierror.Invalid("end", "is more than "+strconv.Itoa(int(maxWindow/(24*time.Hour)))+" days after start")
	}
	return window{start: st, end: en}, nil
}

// parseAt reads at (RFC 3339, required) and qty (integer 1 to 10000,
// default 1). The cache window of a single read is the UTC day of at.
func parseAt(at, qty string) (time.Time, int, error) {
	if at == "" {
		return time.Time{}, 0, apierror.Invalid("at", "is required (RFC 3339)")
	}
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return time.Time{}, 0, apierror.Invalid("at", "must be an RFC 3339 time")
	}
	n := 1
	if qty != "" {
		n, err = strconv.Atoi(qty)
		if err != nil || n < 1 || n > 10000 {
			return time.Time{}, 0, apierror.Invalid("qty", "must be an integer from 1 to 10000")
		}
	}
	return t.UTC(), n, nil
}

func validRateParam(r string) error {
	if len(r) > 128 {
		return apierror.Invalid("rate_id", "is longer than 128 characters")
	}
	return nil
}

func (h handlers) handleList(r *httpapi.Request) error {
	args := r.Ctx.QueryArgs()
	w, err := parseWindow(string(args.Peek("start")), string(args.Peek("end")), h.svc.MaxWindow())
	if err != nil {
		return err
	}
	rid := string(args.Peek("rate_id"))
	if err := validRateParam(rid); err != nil {
		return err
	}
	pid := r.Param(pProduct)
	got, err := h.svc.Load(r.Context(), r.ID, r.Principal.ChannelID, r.Param(pSupplier), pid, rid, w.start, w.end)
	if err != nil {
		return err
	}
	return writeList(r, pid, got)
}

// writeList answers {"meta":{"reqId"},"availabilities":{"byRate":{...},
// "byProduct":{"availability":[...]},"productId","retrieved","expires"}}
// from the cached arrays without decoding them. retrieved is the oldest
// and expires the earliest of the rates' entries.
func writeList(r *httpapi.Request, pid string, got availcache.Entries) error {
	answer(r, got.Stale(), func(b []byte) ([]byte, bool) { return appendList(b, r.ID, pid, got), true })
	return nil
}

func appendList(b []byte, reqID, pid string, got availcache.Entries) []byte {
	b = append(b, `{"meta":{"reqId":`...)
	b = jsonwire.AppendASCII(b, reqID)
	b = append(b, `},"availabilities":{"byRate":{`...)
	var retrieved, expires time.Time
	for i := range got.Len() {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonwire.AppendString(b, got.RateID(i))
		b = append(b, `:{"availability":`...)
		b = append(b, got.Raw(i)...)
		b = append(b, '}')
		if rt := got.Retrieved(i); i == 0 || rt.Before(retrieved) {
			retrieved = rt
		}
		if e := got.Expires(i); i == 0 || e.Before(expires) {
			expires = e
		}
	}
	b = append(b, `},"byProduct":{"availability":[`...)
	first := true
	for i := range got.Len() {
		raw := got.Raw(i)
		if len(raw) <= 2 {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, raw[1:len(raw)-1]...)
	}
	b = append(b, `]},"productId":`...)
	b = jsonwire.AppendString(b, pid)
	b = append(b, `,"retrieved":"`...)
	b = retrieved.UTC().AppendFormat(b, time.RFC3339)
	b = append(b, `","expires":"`...)
	b = expires.UTC().AppendFormat(b, time.RFC3339)
	return append(b, `"}}`...)
}

// answer writes a 200 JSON answer that build appends to a pooled buffer;
// the response takes the buffer as its body (no copy), and its previous
// body buffer goes to the pool in its place. It reports build's ok, and
// writes nothing when build fails.
func answer(r *httpapi.Request, stale bool, build func([]byte) ([]byte, bool)) bool {
	bp := buffers.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 256<<10 {
			buffers.Put(bp)
		}
	}()
	b, ok := build((*bp)[:0])
	if !ok {
		return false
	}
	resp := &r.Ctx.Response
	resp.SetStatusCode(http.StatusOK)
	resp.Header.SetContentType("application/json")
	if stale {
		resp.Header.Set("Warning", `110 - "stale availability"`)
	}
	*bp = resp.SwapBody(b)[:0]
	return true
}

var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// oneAvailability is the single availability answer: the partner's
// availability plus the rateId it belongs to (the reseller may not have
// named the rate).
type oneAvailability struct {
	schemas.Availability
	RateID string `json:"rateId"`
}

type oneResponse struct {
	httpapi.Meta `json:"meta"`
	Availability oneAvailability `json:"availability"`
	Bookable     bool            `json:"bookable"`
}

// handleOne answers GET .../availability?at&qty[&rate_id] (spec doc 2,
// partner table rule 2): the availability whose window contains at with
// capacity ≥ qty (bookable); else one whose window contains at, with the
// most capacity (bookable=false); else 404. Rates are tried in id order.
func (h handlers) handleOne(r *httpapi.Request) error {
	args := r.Ctx.QueryArgs()
	at, qty, err := parseAt(string(args.Peek("at")), string(args.Peek("qty")))
	if err != nil {
		return err
	}
	rid := string(args.Peek("rate_id"))
	if err := validRateParam(rid); err != nil {
		return err
	}
	day := at.Truncate(24 * time.Hour)
	got, err := h.svc.Load(r.Context(), r.ID, r.Principal.ChannelID, r.Param(pSupplier), r.Param(pProduct), rid,
		day, day.Add(24*time.Hour))
	if err != nil {
		return err
	}
	best, found, err := pick(got, at, qty)
	if err != nil {
		return err
	}
	if !found {
		return apierror.New(apierror.NotFound, "no availability at "+at.Format(time.RFC3339))
	}
	bookable := best.Capacity >= qty
	if !answer(r, false, func(b []byte) ([]byte, bool) { return appendOne(b, r.ID, best, bookable) }) {
		// a time encoding/json refuses: let it say so
		return r.JSON(http.StatusOK, &oneResponse{Availability: best, Bookable: bookable})
	}
	return nil
}

// appendOne appends the single availability answer with the bytes
// encoding/json writes for oneResponse (FuzzAppendOne), without its
// reflection: on the hot read path it was 13 % of the binary's CPU under
// wrk (bench/RESULTS.md, issue 21). ok is false, and b unusable, when a
// time is one encoding/json refuses.
func appendOne(b []byte, reqID string, a oneAvailability, bookable bool) (_ []byte, ok bool) {
	b = append(b, `{"meta":{"reqId":`...)
	b = jsonwire.AppendASCII(b, reqID)
	b = append(b, `},"availability":{`...)
	if b, ok = a.AppendMembers(b); !ok {
		return b, false
	}
	b = append(b, `,"rateId":`...)
	b = jsonwire.AppendString(b, a.RateID)
	b = append(b, `},"bookable":`...)
	b = strconv.AppendBool(b, bookable)
	return append(b, '}'), true
}

func pick(got availcache.Entries, at time.Time, qty int) (oneAvailability, bool, error) {
	var best oneAvailability
	found := false
	for i := range got.Len() {
		rid := got.RateID(i)
		as, err := got.Availabilities(i)
		if err != nil {
			return best, false, err
		}
		for _, a := range as {
			if a.Start.After(at) || !a.End.After(at) {
				continue
			}
			if a.Capacity >= qty {
				return oneAvailability{Availability: a, RateID: rid}, true, nil
			}
			if !found || a.Capacity > best.Capacity {
				best, found = oneAvailability{Availability: a, RateID: rid}, true
			}
		}
	}
	return best, found, nil
}

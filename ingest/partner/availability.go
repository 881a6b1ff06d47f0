// Package partner is the client of the partner interface v1.2 (spec doc 2,
// "Partner interface"): the reservation systems of suppliers whose
// connection kind is "partner". It owns the strict parsing of the
// partner's answers (their shapes are schemas', the call's vocabulary
// internal/partnerapi's), the mapping of the partner's failures to domain
// errors (without the partner's internals), a circuit breaker per partner
// and the switchback_ingest_partner_* metrics.
//
// It must not cache, publish or decide who sees what: internal/availcache
// does. Credentials are sent as headers and never logged or put in errors.
package partner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/switchbackhq/switchback/schemas"
)

// The partner's availability answer (spec doc 2) is schemas' wire model,
// shared with the cache that stores it and the snapshots that carry it.
type (
	Availability     = schemas.Availability
	AvailabilityList = schemas.AvailabilityList
	List             = schemas.AvailabilityWrapper
)

// ErrMalformed is a partner answer that breaks the interface; callers
// see it as UNAVAILABLE (the partner's body is never shown).
var ErrMalformed = errors.New("malformed partner response")

// MaxResponseBytes bounds a partner's availabilities answer.
const MaxResponseBytes = 8 << 20

type rawMeta struct {
	ReqID *string `json:"reqId"`
}

type rawAvailabilities struct {
	Availabilities *List    `json:"availabilities"`
	Meta           *rawMeta `json:"meta"`
}

// ParseAvailabilities reads the body of a 200 answer to GET
// .../availabilities strictly: one JSON object with availabilities and
// meta; meta.reqId equal to reqID (when reqID is not empty); productId
// equal to productID (when not empty); retrieved and expires present;
// at least one of byProduct and byRate; every availability with an id,
// start before end, capacity ≥ 0 and maxCapacity ≥ capacity when given.
// Unknown fields are ignored (partners may add fields; spec doc 2's
// objects carry ext maps), trailing data is not.
func ParseAvailabilities(body []byte, reqID, productID string) (List, error) {
	if len(body) > MaxResponseBytes {
		return List{}, fmt.Errorf("%w: body of %d bytes", ErrMalformed, len(body))
	}
	var raw rawAvailabilities
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&raw); err != nil {
		return List{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if dec.More() {
		return List{}, fmt.Errorf("%w: trailing data", ErrMalformed)
	}
	switch {
	case raw.Availabilities == nil:
		return List{}, fmt.Errorf("%w: no availabilities", ErrMalformed)
	case raw.Meta == nil || raw.Meta.ReqID == nil:
		return List{}, fmt.Errorf("%w: no meta.reqId", ErrMalformed)
	case reqID != "" && *raw.Meta.ReqID != reqID:
		return List{}, fmt.Errorf("%w: meta.reqId does not echo X-Request-ID", ErrMalformed)
	}
	l := *raw.Availabilities
	switch {
	case l.Retrieved.IsZero():
		return List{}, fmt.Errorf("%w: no retrieved", ErrMalformed)
	case l.Expires.IsZero():
		return List{}, fmt.Errorf("%w: no expires", ErrMalformed)
	case l.ByProduct == nil && l.ByRate == nil:
		return List{}, fmt.Errorf("%w: neither byProduct nor byRate", ErrMalformed)
	case productID != "" && l.ProductID != "" && l.ProductID != productID:
		return List{}, fmt.Errorf("%w: productId is another product", ErrMalformed)
	}
	check := func(as []Availability) error {
		for i := range as {
			a := &as[i]
			switch {
			case a.ID == "":
				return fmt.Errorf("%w: availability without id", ErrMalformed)
			case a.Start.IsZero() || a.End.IsZero() || !a.Start.Before(a.End):
				return fmt.Errorf("%w: availability %d: start must be before end", ErrMalformed, i)
			case a.Capacity < 0:
				return fmt.Errorf("%w: availability %d: negative capacity", ErrMalformed, i)
			case a.MaxCapacity != nil && *a.MaxCapacity < a.Capacity:
				return fmt.Errorf("%w: availability %d: maxCapacity below capacity", ErrMalformed, i)
			}
			a.Start, a.End = a.Start.UTC(), a.End.UTC()
		}
		return nil
	}
	if l.ByProduct != nil {
		if err := check(l.ByProduct.Availability); err != nil {
			return List{}, err
		}
	}
	for rid, al := range l.ByRate {
		if rid == "" {
			return List{}, fmt.Errorf("%w: byRate with an empty rate id", ErrMalformed)
		}
		if err := check(al.Availability); err != nil {
			return List{}, err
		}
	}
	l.Retrieved, l.Expires = l.Retrieved.UTC(), l.Expires.UTC()
	return l, nil
}

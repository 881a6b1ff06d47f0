package bookingsystem

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// The data rules of spec doc 3 applied to what a booking system returns.
// A list answer (suppliers, products, availability, price schedule) is
// checked item by item: an item that breaks a rule is left out and
// reported as a Problem, the valid items are returned; nothing of a
// rejected item is ever returned (never half-applied). A single-object
// answer (a booking, an order with its bookings) is one item: any problem
// rejects it whole.
//
// Parse functions return an error (ErrMalformed) only when the body as a
// whole is not the JSON doc 3 describes (not an array, trailing data, over
// MaxResponseBytes).

// Rules, the Rule of a Problem and the label of
// switchback_ingest_bookingsystem_rejected_items_total.
const (
	RuleMalformed        = "malformed"                  // the item is not the object doc 3 describes (wrong types)
	RuleIDMissing        = "id_missing"                 // an id that must be present is empty
	RuleIDLength         = "id_length"                  // an id longer than MaxIDLength
	RuleDuplicateID      = "duplicate_id"               // two items with one id (all of them are rejected)
	RuleEndpoint         = "endpoint"                   // a supplier endpoint that is not an http(s) URL
	RuleAvailabilityType = "availability_type"          // not START_TIME or OPENING_HOURS
	RuleTimeZone         = "time_zone"                  // not a tz database name (OCTO: when one is sent)
	RuleOptions          = "options"                    // a product without options
	RuleStatus           = "status"                     // a status outside doc 3's list
	RuleStartTimeFree    = "start_time_freesale"        // FREESALE on a START_TIME product (v2 only)
	RuleOpeningNotFree   = "opening_hours_not_freesale" // not FREESALE on an OPENING_HOURS product (v2 only)
	RuleVacancies        = "vacancies_negative"         // vacancies below 0
	RuleTimeRange        = "time_range"                 // start missing, end missing or end not after start
	RuleContiguous       = "contiguous_range"           // OPENING_HOURS ranges of a day that touch or overlap (v2 only; OCTO's are merged)
	RuleOutsideWindow    = "outside_window"             // starts outside [localDateStart, localDateEnd)
	RuleOtherOption      = "other_option"               // another option than the one asked for
	RuleNotRequested     = "not_requested"              // an availability id the POST check did not ask for
	RuleUUID             = "uuid"                       // not a UUID, or another booking than the one asked for
	RuleTransition       = "transition"                 // a status the call cannot lead to (doc 3 state machine)
	RuleHoldExpiration   = "hold_expiration"            // ON_HOLD without utcHoldExpiration (v2 only)
	RuleOtherOrder       = "other_order"                // another order than the one asked for
	RuleDate             = "date"                       // a price-schedule date that is not YYYY-MM-DD, or end not after start
	RulePrice            = "price"                      // a unit price without unit, currency, or negative; OCTO: prices of one day that disagree
)

// MaxIDLength is doc 3's limit on ids ("at most 1024 characters"). Doc 3
// states it for supplier and product ids; Switchback applies it to every
// id it stores (options, availabilities, orders) so keys stay bounded.
const MaxIDLength = 1024

// Problem is one rejected item: which list and position, its id (cut to
// 64 characters, since an over-long id is itself a problem) and the rule.
// A price-schedule problem's ID is always the option id (callers attribute
// it to the option); Detail then says which part of the option's answer it
// was (OCTO: "availability <id>", "date <YYYY-MM-DD>").
type Problem struct {
	Item   string `json:"item"` // supplier, product, availability, booking, order, priceEntry
	Index  int    `json:"index"`
	ID     string `json:"id,omitempty"`
	Rule   string `json:"rule"`
	Detail string `json:"detail,omitempty"`
}

func (p Problem) String() string {
	if p.Detail != "" {
		return fmt.Sprintf("%s %d (%q, %s): %s", p.Item, p.Index, p.ID, p.Detail, p.Rule)
	}
	return fmt.Sprintf("%s %d (%q): %s", p.Item, p.Index, p.ID, p.Rule)
}

func shortID(id string) string {
	if len(id) > 64 {
		return id[:64] + "…"
	}
	return id
}

// checkID returns the rule an id breaks, or "".
func checkID(id string) string {
	switch {
	case id == "":
		return RuleIDMissing
	case len([]rune(id)) > MaxIDLength:
		return RuleIDLength
	}
	return ""
}

// decodeItems reads a JSON array and each element into T. An element that
// does not decode is a RuleMalformed problem; the others are returned with
// their index in the array.
func decodeItems[T any](body []byte, item string) ([]T, []int, []Problem, error) {
	var raws []json.RawMessage
	if err := decodeStrict(body, &raws); err != nil {
		return nil, nil, nil, err
	}
	if raws == nil {
		return nil, nil, nil, fmt.Errorf("%w: not an array", ErrMalformed)
	}
	out := make([]T, 0, len(raws))
	idx := make([]int, 0, len(raws))
	var ps []Problem
	for i, r := range raws {
		var v T
		if err := json.Unmarshal(r, &v); err != nil {
			ps = append(ps, Problem{Item: item, Index: i, ID: rawID(r), Rule: RuleMalformed})
			continue
		}
		out = append(out, v)
		idx = append(idx, i)
	}
	return out, idx, ps, nil
}

// rawID is the id of an element that did not decode, when it has one.
func rawID(r json.RawMessage) string {
	var v struct {
		ID   any `json:"id"`
		UUID any `json:"uuid"`
	}
	if json.Unmarshal(r, &v) != nil {
		return ""
	}
	for _, x := range []any{v.ID, v.UUID} {
		if s, ok := x.(string); ok {
			return shortID(s)
		}
	}
	return ""
}

// keep returns the items whose index is not in bad, and the problems
// sorted by index then rule. Items may share an index (an OCTO day split
// into its opening ranges): they are kept or rejected together, and their
// problems reported once, with the first one's id.
func keep[T any](items []T, idx []int, bad map[int][]string, item string, ids func(T) string, ps []Problem) ([]T, []Problem) {
	out := make([]T, 0, len(items))
	reported := map[int]bool{}
	for k, v := range items {
		rules := bad[idx[k]]
		if len(rules) == 0 {
			out = append(out, v)
			continue
		}
		if reported[idx[k]] {
			continue
		}
		reported[idx[k]] = true
		for _, r := range dedupe(rules) {
			ps = append(ps, Problem{Item: item, Index: idx[k], ID: shortID(ids(v)), Rule: r})
		}
	}
	slices.SortFunc(ps, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Index, b.Index), cmp.Compare(a.Rule, b.Rule))
	})
	return out, ps
}

// markDuplicates adds RuleDuplicateID to every item (of those not already
// rejected) whose key is shared: which of two is right is unknowable.
func markDuplicates(keys []string, idx []int, bad map[int][]string) {
	// key → 1 + position of its first valid holder; negated once that
	// holder is marked.
	first := make(map[string]int, len(keys))
	for k, key := range keys {
		if len(bad[idx[k]]) != 0 {
			continue
		}
		f, ok := first[key]
		switch {
		case !ok:
			first[key] = k + 1
			continue
		case f > 0:
			bad[idx[f-1]] = append(bad[idx[f-1]], RuleDuplicateID)
			first[key] = -f
		}
		bad[idx[k]] = append(bad[idx[k]], RuleDuplicateID)
	}
}

// ParseSuppliers reads the answer to GET /suppliers.
func ParseSuppliers(body []byte) ([]Supplier, []Problem, error) {
	items, idx, ps, err := decodeItems[Supplier](body, "supplier")
	if err != nil {
		return nil, nil, err
	}
	bad := map[int][]string{}
	keys := make([]string, len(items))
	for k := range items {
		s := &items[k]
		if r := checkID(s.ID); r != "" {
			bad[idx[k]] = append(bad[idx[k]], r)
		}
		u, err := url.Parse(s.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad[idx[k]] = append(bad[idx[k]], RuleEndpoint)
		}
		s.Endpoint = strings.TrimSuffix(s.Endpoint, "/") // doc 3: SHOULD NOT end with /
		keys[k] = s.ID
	}
	markDuplicates(keys, idx, bad)
	out, ps := keep(items, idx, bad, "supplier", func(s Supplier) string { return s.ID }, ps)
	return out, ps, nil
}

// zones caches the locations of valid tz names only: they are a few
// hundred, while a booking system could send any number of invalid ones.
var zones sync.Map

func validZone(name string) bool {
	_, ok := zoneLocation(name)
	return ok
}

// zoneLocation is the location of a tz database name ("Local" is not one).
func zoneLocation(name string) (*time.Location, bool) {
	if name == "" || name == "Local" || len(name) > 64 {
		return nil, false
	}
	if l, ok := zones.Load(name); ok {
		return l.(*time.Location), true
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, false
	}
	zones.Store(name, l)
	return l, true
}

// localDate is the local date of t: in loc (the product's time zone) when
// known, else in the offset t was sent with.
func localDate(t time.Time, loc *time.Location) string {
	if loc != nil {
		t = t.In(loc)
	}
	y, m, d := t.Date()
	if y < 0 || y > 9999 {
		return t.Format(time.DateOnly)
	}
	// time.DateOnly, without Format's layout walk: called twice per
	// availability read.
	b := [10]byte{byte('0' + y/1000), byte('0' + y/100%10), byte('0' + y/10%10), byte('0' + y%10), '-',
		byte('0' + int(m)/10), byte('0' + int(m)%10), '-', byte('0' + d/10), byte('0' + d%10)}
	return string(b[:])
}

func currencyCode(c string) bool {
	if len(c) != 3 {
		return false
	}
	for i := range 3 {
		if c[i] < 'A' || c[i] > 'Z' {
			return false
		}
	}
	return true
}

// ParseProducts reads the answer to GET /suppliers/{s}/products.
func ParseProducts(body []byte) ([]Product, []Problem, error) {
	return parseProducts(body, false)
}

// parseProducts reads a product list of either dialect. The rules are
// doc 3's but for OCTO's product shape (octo): a timeZone may be absent
// (OCTO does not require it; the offsets of the answers then count), and
// delivery formats are mapped to the catalog's spelling
// (OCTODeliveryFormat).
func parseProducts(body []byte, octo bool) ([]Product, []Problem, error) {
	items, idx, ps, err := decodeItems[Product](body, "product")
	if err != nil {
		return nil, nil, err
	}
	bad := map[int][]string{}
	keys := make([]string, len(items))
	for k := range items {
		p, i := &items[k], idx[k]
		if r := checkID(p.ID); r != "" {
			bad[i] = append(bad[i], r)
		}
		if p.AvailabilityType != StartTime && p.AvailabilityType != OpeningHours {
			bad[i] = append(bad[i], RuleAvailabilityType)
		}
		if !validZone(p.TimeZone) && (!octo || p.TimeZone != "") {
			bad[i] = append(bad[i], RuleTimeZone)
		}
		if octo {
			for j, f := range p.DeliveryFormats {
				p.DeliveryFormats[j] = OCTODeliveryFormat(f)
			}
		}
		if len(p.Options) == 0 {
			bad[i] = append(bad[i], RuleOptions)
		}
		seen := map[string]bool{}
		for _, o := range p.Options {
			if r := checkID(o.ID); r != "" {
				bad[i] = append(bad[i], r)
			} else if seen[o.ID] {
				bad[i] = append(bad[i], RuleDuplicateID)
			}
			seen[o.ID] = true
			for _, u := range o.Units {
				if r := checkID(u.ID); r != "" {
					bad[i] = append(bad[i], r)
				}
			}
		}
		bad[i] = dedupe(bad[i])
		keys[k] = p.ID
	}
	markDuplicates(keys, idx, bad)
	out, ps := keep(items, idx, bad, "product", func(p Product) string { return p.ID }, ps)
	return out, ps, nil
}

func dedupe(rules []string) []string {
	slices.Sort(rules)
	return slices.Compact(rules)
}

// AvailabilityExpect is what an availability answer must agree with.
type AvailabilityExpect struct {
	// AvailabilityType of the product (required): START_TIME forbids
	// FREESALE, OPENING_HOURS allows only FREESALE (doc 3, Product).
	AvailabilityType string
	// OptionID, when set: every availability must be of this option.
	OptionID string
	// LocalDateStart (inclusive) and LocalDateEnd (exclusive), YYYY-MM-DD,
	// when set: every availability must start on a local date in between.
	LocalDateStart, LocalDateEnd string
	// AvailabilityIDs, when set (POST availability): only these ids.
	AvailabilityIDs []string
	// TimeZone of the product (tz name), when set: the local date of an
	// availability (for the window and the one-range-per-day rule) is its
	// start's date there, as ingest/bookingsync takes it, whatever offset
	// the booking system sent (some send UTC). Empty: the offset sent.
	TimeZone string

	// octo: an OCTO answer (ParseOCTOAvailability), to which doc 3's own
	// rules do not apply (see checkAvailabilities).
	octo bool
}

// location is exp.TimeZone's location (nil when none is set).
func (exp AvailabilityExpect) location() (*time.Location, error) {
	if exp.TimeZone == "" {
		return nil, nil
	}
	loc, ok := zoneLocation(exp.TimeZone)
	if !ok {
		return nil, fmt.Errorf("%w: timeZone %q", ErrInvalid, exp.TimeZone)
	}
	return loc, nil
}

var availabilityStatuses = []string{Freesale, Available, Limited, SoldOut, Closed}

// ParseAvailability reads the answer to GET or POST
// /suppliers/{s}/availability. Fractions of seconds are dropped (doc 3);
// times keep their offset (they are local times).
func ParseAvailability(body []byte, exp AvailabilityExpect) ([]Availability, []Problem, error) {
	if exp.AvailabilityType != StartTime && exp.AvailabilityType != OpeningHours {
		return nil, nil, fmt.Errorf("%w: availabilityType %q", ErrInvalid, exp.AvailabilityType)
	}
	loc, err := exp.location()
	if err != nil {
		return nil, nil, err
	}
	raw, idx, fast := decodeV2AvailabilityFast(body)
	var ps []Problem
	if !fast {
		raw, idx, ps, err = decodeItems[v2Availability](body, "availability")
		if err != nil {
			return nil, nil, err
		}
	}
	items := make([]Availability, len(raw))
	for k, a := range raw {
		items[k] = a.availability()
	}
	out, ps := checkAvailabilities(items, idx, ps, exp, loc)
	return out, ps, nil
}

// checkAvailabilities applies the availability rules to decoded items of
// either dialect (idx: their positions in the answer) and keeps the valid
// ones; loc is the product's time zone (exp.location), nil for none.
//
// Doc 3's own rules apply to a v2 answer only: the statuses an
// availability type allows (START_TIME never FREESALE, OPENING_HOURS only
// FREESALE) and one availability per contiguous opening range (rule 2).
// OCTO allows any status on either type, and its opening ranges are
// merged rather than refused (openingRanges). The other rules (ids,
// status list, times, window, vacancies, duplicates, option) are the
// client's own sanity checks and apply to both.
func checkAvailabilities(items []Availability, idx []int, ps []Problem, exp AvailabilityExpect, loc *time.Location) ([]Availability, []Problem) {
	bad := map[int][]string{}
	keys := make([]string, len(items))
	for k := range items {
		a, i := &items[k], idx[k]
		a.LocalDateTimeStart = a.LocalDateTimeStart.Truncate(time.Second)
		a.LocalDateTimeEnd = a.LocalDateTimeEnd.Truncate(time.Second)
		if r := checkID(a.ID); r != "" {
			bad[i] = append(bad[i], r)
		}
		if r := checkID(a.OptionID); r != "" {
			bad[i] = append(bad[i], r)
		} else if exp.OptionID != "" && a.OptionID != exp.OptionID {
			bad[i] = append(bad[i], RuleOtherOption)
		}
		switch {
		case !slices.Contains(availabilityStatuses, a.Status):
			bad[i] = append(bad[i], RuleStatus)
		case exp.octo:
		case exp.AvailabilityType == StartTime && a.Status == Freesale:
			bad[i] = append(bad[i], RuleStartTimeFree)
		case exp.AvailabilityType == OpeningHours && a.Status != Freesale:
			bad[i] = append(bad[i], RuleOpeningNotFree)
		}
		if a.Vacancies != nil && *a.Vacancies < 0 {
			bad[i] = append(bad[i], RuleVacancies)
		}
		if a.LocalDateTimeStart.IsZero() || a.LocalDateTimeEnd.IsZero() || !a.LocalDateTimeStart.Before(a.LocalDateTimeEnd) {
			bad[i] = append(bad[i], RuleTimeRange)
		} else if d := localDate(a.LocalDateTimeStart, loc); (exp.LocalDateStart != "" && d < exp.LocalDateStart) ||
			(exp.LocalDateEnd != "" && d >= exp.LocalDateEnd) {
			bad[i] = append(bad[i], RuleOutsideWindow)
		}
		if exp.AvailabilityIDs != nil && !slices.Contains(exp.AvailabilityIDs, a.ID) {
			bad[i] = append(bad[i], RuleNotRequested)
		}
		// OCTO only (a v2 answer has no capacity or prices): capacity
		// below 0, or a price that breaks the price rule.
		if (a.Capacity != nil && *a.Capacity < 0) || (a.MaxUnits != nil && *a.MaxUnits < 0) {
			bad[i] = append(bad[i], RuleVacancies)
		}
		if badUnitPricing(a.UnitPricing) {
			bad[i] = append(bad[i], RulePrice)
		}
		keys[k] = a.OptionID + "\x00" + a.ID // ids are unique within the option
	}
	markDuplicates(keys, idx, bad)
	if exp.AvailabilityType == OpeningHours && !exp.octo {
		markContiguous(items, idx, bad, loc)
	}
	return keep(items, idx, bad, "availability", func(a Availability) string { return a.ID }, ps)
}

// markContiguous enforces doc 3 rule 2: one availability per contiguous
// opening range of a day. Ranges of one option and local day (in loc, see
// localDate) that touch or overlap should have been one; which one is
// right is unknowable, so every member of such a run is rejected.
func markContiguous(items []Availability, idx []int, bad map[int][]string, loc *time.Location) {
	type ref struct {
		k          int
		start, end time.Time
	}
	groups := map[string][]ref{}
	for k, a := range items {
		if len(bad[idx[k]]) == 0 {
			key := a.OptionID + "\x00" + localDate(a.LocalDateTimeStart, loc)
			groups[key] = append(groups[key], ref{k, a.LocalDateTimeStart, a.LocalDateTimeEnd})
		}
	}
	for _, g := range groups {
		slices.SortFunc(g, func(a, b ref) int { return a.start.Compare(b.start) })
		for s := 0; s < len(g); {
			e, end := s+1, g[s].end
			for e < len(g) && !g[e].start.After(end) {
				if g[e].end.After(end) {
					end = g[e].end
				}
				e++
			}
			if e-s > 1 {
				for _, r := range g[s:e] {
					bad[idx[r.k]] = append(bad[idx[r.k]], RuleContiguous)
				}
			}
			s = e
		}
	}
}

var bookingStatuses = []string{OnHold, Expired, Pending, Rejected, Confirmed, Cancelled}

// BookingExpect is what a booking answer must agree with.
type BookingExpect struct {
	// UUID, when set: the booking asked for.
	UUID string
	// Statuses, when set: the statuses the call may lead to (doc 3,
	// States and transitions): createBooking ON_HOLD or REJECTED, ...
	Statuses []string

	// octo: an OCTO answer, whose utcExpiresAt may be null on ON_HOLD
	// (OCTO makes it nullable; doc 3's utcHoldExpiration is a MUST).
	octo bool
}

// checkBooking returns the rules b breaks; it drops fractions of seconds.
func checkBooking(b *Booking, exp BookingExpect) []string {
	var rules []string
	if _, err := uuid.Parse(b.UUID); err != nil || len(b.UUID) != 36 {
		rules = append(rules, RuleUUID)
	} else if exp.UUID != "" && !strings.EqualFold(b.UUID, exp.UUID) {
		rules = append(rules, RuleUUID)
	}
	if b.ChannelID != "" {
		if _, err := uuid.Parse(b.ChannelID); err != nil {
			rules = append(rules, RuleUUID)
		}
	}
	switch {
	case !slices.Contains(bookingStatuses, b.Status):
		rules = append(rules, RuleStatus)
	case exp.Statuses != nil && !slices.Contains(exp.Statuses, b.Status):
		rules = append(rules, RuleTransition)
	}
	for _, id := range []string{b.ProductID, b.OptionID} {
		if r := checkID(id); r != "" {
			rules = append(rules, r)
		}
	}
	if b.UTCHoldExpiration != nil {
		t := b.UTCHoldExpiration.Truncate(time.Second)
		b.UTCHoldExpiration = &t
	} else if b.Status == OnHold && !exp.octo {
		rules = append(rules, RuleHoldExpiration)
	}
	if a := b.Availability; a != nil {
		a.LocalDateTimeStart = a.LocalDateTimeStart.Truncate(time.Second)
		a.LocalDateTimeEnd = a.LocalDateTimeEnd.Truncate(time.Second)
		if r := checkID(a.ID); r != "" {
			rules = append(rules, r)
		}
		if !a.LocalDateTimeStart.IsZero() && !a.LocalDateTimeEnd.IsZero() && !a.LocalDateTimeStart.Before(a.LocalDateTimeEnd) {
			rules = append(rules, RuleTimeRange)
		}
	}
	for _, u := range b.UnitItems {
		if r := checkID(u.UnitID); r != "" {
			rules = append(rules, r)
		}
	}
	return dedupe(rules)
}

// ParseBooking reads a booking answer (create, get, confirm, cancel).
func ParseBooking(body []byte, exp BookingExpect) (Booking, []Problem, error) {
	var b Booking
	if err := decodeStrict(body, &b); err != nil {
		return Booking{}, nil, err
	}
	var ps []Problem
	for _, r := range checkBooking(&b, exp) {
		ps = append(ps, Problem{Item: "booking", ID: shortID(b.UUID), Rule: r})
	}
	if ps != nil {
		return Booking{}, ps, nil
	}
	return b, nil, nil
}

// OrderExpect is what an order answer must agree with.
type OrderExpect struct {
	ID       string   // when set: the order asked for
	Statuses []string // when set: the statuses the call may lead to
}

// ParseOrder reads an order answer. Orders are all-or-nothing (doc 3):
// a problem in any of its bookings rejects the whole order.
func ParseOrder(body []byte, exp OrderExpect) (Order, []Problem, error) {
	var o Order
	if err := decodeStrict(body, &o); err != nil {
		return Order{}, nil, err
	}
	var ps []Problem
	add := func(r string) { ps = append(ps, Problem{Item: "order", ID: shortID(o.ID), Rule: r}) }
	if r := checkID(o.ID); r != "" {
		add(r)
	} else if exp.ID != "" && o.ID != exp.ID {
		add(RuleOtherOrder)
	}
	switch {
	case !slices.Contains(orderStatuses, o.Status):
		add(RuleStatus)
	case exp.Statuses != nil && !slices.Contains(exp.Statuses, o.Status):
		add(RuleTransition)
	}
	for _, t := range []**time.Time{&o.UTCExpiresAt, &o.UTCConfirmedAt} {
		if *t != nil {
			v := (*t).Truncate(time.Second)
			*t = &v
		}
	}
	seen := map[string]bool{}
	for i := range o.Bookings {
		b := &o.Bookings[i]
		rules := checkBooking(b, BookingExpect{})
		if seen[strings.ToLower(b.UUID)] {
			rules = append(rules, RuleDuplicateID)
		}
		seen[strings.ToLower(b.UUID)] = true
		for _, r := range rules {
			ps = append(ps, Problem{Item: "booking", Index: i, ID: shortID(b.UUID), Rule: r})
		}
	}
	if ps != nil {
		return Order{}, ps, nil
	}
	return o, nil, nil
}

// ParsePriceSchedule reads the answer of the price-schedule read.
func ParsePriceSchedule(body []byte) ([]PriceEntry, []Problem, error) {
	items, idx, ps, err := decodeItems[PriceEntry](body, "priceEntry")
	if err != nil {
		return nil, nil, err
	}
	bad := map[int][]string{}
	for k := range items {
		bad[idx[k]] = priceEntryRules(&items[k])
	}
	out, ps := keep(items, idx, bad, "priceEntry", func(e PriceEntry) string { return e.OptionID }, ps)
	return out, ps, nil
}

// priceEntryRules returns the rules a price entry breaks: its option id,
// its dates (YYYY-MM-DD, end after start), its unit prices.
func priceEntryRules(e *PriceEntry) []string {
	var rules []string
	if r := checkID(e.OptionID); r != "" {
		rules = append(rules, r)
	}
	s, err1 := time.Parse(time.DateOnly, e.LocalDateStart)
	en, err2 := time.Parse(time.DateOnly, e.LocalDateEnd)
	if err1 != nil || err2 != nil || !s.Before(en) {
		rules = append(rules, RuleDate)
	}
	for _, u := range e.UnitPricing {
		if badUnitPrice(u) {
			rules = append(rules, RulePrice)
			break
		}
	}
	return rules
}

// badUnitPrice: a price without unit or currency (ISO 4217 form), with a
// negative amount, or a currency precision outside 0–8.
func badUnitPrice(u UnitPrice) bool {
	return checkID(u.UnitID) != "" || !currencyCode(u.Currency) ||
		u.Retail < 0 || (u.Net != nil && *u.Net < 0) || u.CurrencyPrecision < 0 || u.CurrencyPrecision > 8
}

// badUnitPricing: one bad price, or two prices of one unit and currency.
func badUnitPricing(us []UnitPrice) bool {
	seen := map[[2]string]bool{}
	for _, u := range us {
		k := [2]string{u.UnitID, u.Currency}
		if badUnitPrice(u) || seen[k] {
			return true
		}
		seen[k] = true
	}
	return false
}

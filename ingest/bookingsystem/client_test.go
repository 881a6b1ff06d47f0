package bookingsystem_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/platform/outbound"
	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
)

// allowLoopback is the outbound policy of these tests: their simulators
// listen on loopback over http, which the default policy refuses.
var allowLoopback = outbound.Policy{AllowHTTP: true, AllowPrivate: true}

const apiKey = "bs-key-4f1d2c9e-never-shown"

var t0 = time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)

// clock is a settable clock shared by the simulator and the client.
type clock struct{ ns atomic.Int64 }

func newClock() *clock               { c := &clock{}; c.ns.Store(t0.UnixNano()); return c }
func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

// seen records the headers and queries the simulator received.
type seen struct {
	mu      sync.Mutex
	headers []http.Header
	queries []string
}

func (s *seen) last() (http.Header, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.headers[len(s.headers)-1], s.queries[len(s.queries)-1]
}

type env struct {
	sim   *bookingsim.Server
	conn  bookingsystem.Connection
	c     *bookingsystem.Client
	clock *clock
	seen  *seen
}

func newEnv(t *testing.T, cfg bookingsim.Config, opts bookingsystem.Options) env {
	t.Helper()
	ck := newClock()
	cfg.APIKey = apiKey
	cfg.Clock = ck.now
	sim := bookingsim.New(cfg)
	sn := &seen{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sn.mu.Lock()
		sn.headers, sn.queries = append(sn.headers, r.Header.Clone()), append(sn.queries, r.URL.RawQuery)
		sn.mu.Unlock()
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	if opts.Clock == nil {
		opts.Clock = ck.now
	}
	// The simulator listens on loopback over http.
	opts.Outbound = allowLoopback
	return env{sim: sim, conn: bookingsystem.Connection{Endpoint: ts.URL, APIKey: apiKey},
		c: bookingsystem.NewClient(opts), clock: ck, seen: sn}
}

var ctx = context.Background()

func TestSuppliersAndProducts_BearerAndCapabilities(t *testing.T) {
	e := newEnv(t, bookingsim.Config{}, bookingsystem.Options{})
	sups, ps, err := e.c.Suppliers(ctx, e.conn)
	if err != nil || len(ps) != 0 || len(sups) != 2 || sups[0].ID != "S1" || sups[0].Endpoint != e.conn.Endpoint {
		t.Fatalf("suppliers %+v problems %v err %v", sups, ps, err)
	}
	if h, _ := e.seen.last(); h.Get("Authorization") != "Bearer "+apiKey {
		t.Fatalf("Authorization = %q", h.Get("Authorization"))
	}
	prods, ps, err := e.c.Products(ctx, e.conn, "S1", []string{"octo/pricing", "octo/content"})
	if err != nil || len(ps) != 0 || len(prods) != 4 {
		t.Fatalf("products %d problems %v err %v", len(prods), ps, err)
	}
	if h, _ := e.seen.last(); h.Get("X-Capabilities") != "octo/pricing,octo/content" {
		t.Fatalf("X-Capabilities = %q", h.Get("X-Capabilities"))
	}
	if prods[0].AvailabilityType != bookingsystem.StartTime || prods[1].AvailabilityType != bookingsystem.OpeningHours ||
		prods[2].InstantConfirmation || len(prods[0].Options) != 2 || len(prods[0].Options[0].Units) != 2 {
		t.Fatalf("unexpected products %+v", prods)
	}
	if _, _, err := e.c.Products(ctx, e.conn, "S9", nil); !errors.Is(err, bookingsystem.ErrNotFound) {
		t.Fatalf("unknown supplier: %v", err)
	}
}

func avReq(product, typ string) bookingsystem.AvailabilityRequest {
	return bookingsystem.AvailabilityRequest{SupplierID: "S1", ProductID: product, OptionID: product + "-O1",
		LocalDateStart: "2026-11-23", LocalDateEnd: "2026-11-25", AvailabilityType: typ}
}

func TestAvailability_GetSendsWindowAndParsesBothTypes(t *testing.T) {
	e := newEnv(t, bookingsim.Config{}, bookingsystem.Options{})
	as, ps, err := e.c.Availability(ctx, e.conn, avReq("S1-P1", bookingsystem.StartTime))
	if err != nil || len(ps) != 0 || len(as) != 6 {
		t.Fatalf("START_TIME: %d %v %v", len(as), ps, err)
	}
	if _, q := e.seen.last(); q != "localDateEnd=2026-11-25&localDateStart=2026-11-23&optionId=S1-P1-O1&productId=S1-P1" {
		t.Fatalf("query %q", q)
	}
	for _, a := range as {
		if a.Status == bookingsystem.Freesale || a.Vacancies == nil || a.OptionID != "S1-P1-O1" {
			t.Fatalf("START_TIME availability %+v", a)
		}
	}
	as, ps, err = e.c.Availability(ctx, e.conn, avReq("S1-P2", bookingsystem.OpeningHours))
	if err != nil || len(ps) != 0 || len(as) != 4 {
		t.Fatalf("OPENING_HOURS: %d %v %v", len(as), ps, err)
	}
	for _, a := range as {
		if a.Status != bookingsystem.Freesale {
			t.Fatalf("OPENING_HOURS availability %+v", a)
		}
	}
	bad := avReq("S1-P1", bookingsystem.StartTime)
	bad.LocalDateEnd = bad.LocalDateStart
	if _, _, err := e.c.Availability(ctx, e.conn, bad); !errors.Is(err, bookingsystem.ErrInvalid) {
		t.Fatalf("empty window: %v", err)
	}
}

func TestCheckAvailability_PostAnswersWhetherUnitsFit(t *testing.T) {
	e := newEnv(t, bookingsim.Config{OpeningRanges: []bookingsim.Range{{From: 9, To: 17}}}, bookingsystem.Options{})
	as, _, err := e.c.Availability(ctx, e.conn, avReq("S1-P2", bookingsystem.OpeningHours))
	if err != nil || len(as) != 2 {
		t.Fatal(len(as), err)
	}
	got, ps, err := e.c.CheckAvailability(ctx, e.conn, bookingsystem.AvailabilityCheck{
		SupplierID: "S1", AvailabilityType: bookingsystem.OpeningHours, ProductID: "S1-P2", OptionID: "S1-P2-O1",
		AvailabilityIDs: []string{as[0].ID}, Units: []bookingsystem.UnitQuantity{{UnitID: "adult", Quantity: 3}},
	})
	if err != nil || len(ps) != 0 || len(got) != 1 || got[0].Available == nil || !*got[0].Available {
		t.Fatalf("check: %+v %v %v", got, ps, err)
	}
}

func TestDataRules_RejectedItemByItem(t *testing.T) {
	tests := []struct {
		brk       string
		product   string // "" for the products list
		typ       string
		wantRules []string
		wantValid int
	}{
		{bookingsim.BreakIDLength, "", "", []string{"id_length"}, 4},
		{bookingsim.BreakAvailabilityTyp, "", "", []string{"availability_type"}, 4},
		{bookingsim.BreakIDLength, "S1-P1", bookingsystem.StartTime, []string{"id_length"}, 5},
		{bookingsim.BreakStartTimeFree, "S1-P1", bookingsystem.StartTime, []string{"start_time_freesale"}, 5},
		{bookingsim.BreakOpeningNotFree, "S1-P2", bookingsystem.OpeningHours, []string{"opening_hours_not_freesale"}, 3},
		{bookingsim.BreakVacancies, "S1-P1", bookingsystem.StartTime, []string{"vacancies_negative"}, 5},
		{bookingsim.BreakStatus, "S1-P1", bookingsystem.StartTime, []string{"status"}, 5},
		{bookingsim.BreakTimeRange, "S1-P1", bookingsystem.StartTime, []string{"time_range"}, 5},
		{bookingsim.BreakDuplicateID, "S1-P1", bookingsystem.StartTime, []string{"duplicate_id", "duplicate_id"}, 5},
		{bookingsim.BreakContiguous, "S1-P2", bookingsystem.OpeningHours, []string{"contiguous_range", "contiguous_range"}, 3},
		{bookingsim.BreakFractions, "S1-P1", bookingsystem.StartTime, nil, 6},
	}
	for _, tt := range tests {
		t.Run(tt.brk+"/"+tt.product, func(t *testing.T) {
			e := newEnv(t, bookingsim.Config{Break: []string{tt.brk}}, bookingsystem.Options{})
			var ps []bookingsystem.Problem
			var valid int
			var err error
			if tt.product == "" {
				var prods []bookingsystem.Product
				prods, ps, err = e.c.Products(ctx, e.conn, "S1", nil)
				valid = len(prods)
			} else {
				var as []bookingsystem.Availability
				as, ps, err = e.c.Availability(ctx, e.conn, avReq(tt.product, tt.typ))
				valid = len(as)
				for _, a := range as {
					if a.LocalDateTimeStart.Nanosecond() != 0 || a.LocalDateTimeEnd.Nanosecond() != 0 {
						t.Fatalf("fractions kept: %v", a.LocalDateTimeStart)
					}
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			var rules []string
			for _, p := range ps {
				rules = append(rules, p.Rule)
				if p.ID == "" && p.Rule != "id_missing" {
					t.Errorf("problem without id: %+v", p)
				}
			}
			if !slices.Equal(rules, tt.wantRules) || valid != tt.wantValid {
				t.Fatalf("rules %v valid %d, want %v %d (problems %v)", rules, valid, tt.wantRules, tt.wantValid, ps)
			}
		})
	}
}

func bookingReq(product string, slot string) bookingsystem.BookingRequest {
	return bookingsystem.BookingRequest{
		SupplierID: "S1", UUID: uuid.NewString(), ChannelName: "demo", ChannelID: "6f1c3a52-8a0e-4c55-9d57-2f1b0e7b9a10",
		ProductID: product, OptionID: product + "-O1", AvailabilityID: slot,
		UnitItems: []bookingsystem.UnitItem{{UnitID: "adult"}}, HoldExpirationMinutes: 30,
	}
}

// openSlot is an availability of product's first option that can take a
// booking.
func openSlot(t *testing.T, e env, product, typ string) string {
	t.Helper()
	as, _, err := e.c.Availability(ctx, e.conn, avReq(product, typ))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if a.Status == bookingsystem.Freesale || ((a.Status == bookingsystem.Available || a.Status == bookingsystem.Limited) && *a.Vacancies >= 2) {
			return a.ID
		}
	}
	t.Fatal("no open slot")
	return ""
}

func TestBookingStateMachine(t *testing.T) {
	type step struct {
		op      string // create, confirm, cancel, get, lapse, accept, reject
		want    string // status after the step ("" when an error is wanted)
		wantErr error
	}
	tests := []struct {
		name    string
		product string
		steps   []step
	}{
		{"hold, confirm, cancel", "S1-P2", []step{{"create", "ON_HOLD", nil}, {"confirm", "CONFIRMED", nil}, {"cancel", "CANCELLED", nil}}},
		{"confirm retried answers the same", "S1-P2", []step{{"create", "ON_HOLD", nil}, {"confirm", "CONFIRMED", nil}, {"confirm", "CONFIRMED", nil}}},
		{"released before confirmation expires", "S1-P2", []step{{"create", "ON_HOLD", nil}, {"cancel", "EXPIRED", nil}, {"confirm", "", bookingsystem.ErrRejected}}},
		{"hold lapses", "S1-P2", []step{{"create", "ON_HOLD", nil}, {"lapse", "EXPIRED", nil}, {"confirm", "", bookingsystem.ErrRejected}}},
		{"cancelled cannot be confirmed", "S1-P2", []step{{"create", "ON_HOLD", nil}, {"confirm", "CONFIRMED", nil}, {"cancel", "CANCELLED", nil}, {"confirm", "", bookingsystem.ErrRejected}}},
		{"pending accepted", "S1-P3", []step{{"create", "ON_HOLD", nil}, {"confirm", "PENDING", nil}, {"accept", "CONFIRMED", nil}}},
		{"pending rejected", "S1-P3", []step{{"create", "ON_HOLD", nil}, {"confirm", "PENDING", nil}, {"reject", "REJECTED", nil}, {"cancel", "", bookingsystem.ErrRejected}}},
		{"pending cannot be cancelled", "S1-P3", []step{{"create", "ON_HOLD", nil}, {"confirm", "PENDING", nil}, {"cancel", "", bookingsystem.ErrRejected}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, bookingsim.Config{}, bookingsystem.Options{})
			typ := bookingsystem.StartTime
			if tt.product == "S1-P2" {
				typ = bookingsystem.OpeningHours
			}
			req := bookingReq(tt.product, openSlot(t, e, tt.product, typ))
			for i, s := range tt.steps {
				var b bookingsystem.Booking
				var err error
				switch s.op {
				case "create":
					b, err = e.c.CreateBooking(ctx, e.conn, req)
				case "confirm":
					b, err = e.c.ConfirmBooking(ctx, e.conn, "S1", req.UUID, bookingsystem.ConfirmRequest{})
				case "cancel":
					b, err = e.c.CancelBooking(ctx, e.conn, "S1", req.UUID, bookingsystem.CancelRequest{Reason: "CUSTOMER"})
				case "lapse":
					e.clock.add(31 * time.Minute)
					b, err = e.c.GetBooking(ctx, e.conn, "S1", req.UUID)
				case "accept", "reject":
					if err := e.sim.Decide(req.UUID, s.op == "accept"); err != nil {
						t.Fatal(err)
					}
					b, err = e.c.GetBooking(ctx, e.conn, "S1", req.UUID)
				}
				if s.wantErr != nil {
					if !errors.Is(err, s.wantErr) {
						t.Fatalf("step %d %s: err %v, want %v", i, s.op, err, s.wantErr)
					}
					continue
				}
				if err != nil || b.Status != s.want || b.UUID != req.UUID {
					t.Fatalf("step %d %s: status %q err %v, want %q", i, s.op, b.Status, err, s.want)
				}
			}
		})
	}
}

func TestCreateBooking_IdempotentByUUID(t *testing.T) {
	e := newEnv(t, bookingsim.Config{}, bookingsystem.Options{})
	req := bookingReq("S1-P2", openSlot(t, e, "S1-P2", bookingsystem.OpeningHours))
	req.ResellerReference = "R-1"
	first, err := e.c.CreateBooking(ctx, e.conn, req)
	if err != nil || first.Status != bookingsystem.OnHold || first.UTCHoldExpiration == nil ||
		!first.UTCHoldExpiration.Equal(t0.Add(30*time.Minute)) || first.ResellerReference == nil || *first.ResellerReference != "R-1" {
		t.Fatalf("first: %+v %v", first, err)
	}
	again, err := e.c.CreateBooking(ctx, e.conn, req)
	if err != nil || again.UUID != first.UUID || *again.SupplierReference != *first.SupplierReference || e.sim.Bookings() != 1 {
		t.Fatalf("retry: %+v %v (bookings %d)", again, err, e.sim.Bookings())
	}
	other := req
	other.ResellerReference = "R-2"
	_, err = e.c.CreateBooking(ctx, e.conn, other)
	var ce *bookingsystem.CallError
	if !errors.Is(err, bookingsystem.ErrRejected) || !errors.As(err, &ce) || ce.Status != 400 || e.sim.Bookings() != 1 {
		t.Fatalf("other data: %v", err)
	}
}

func TestCreateBooking_InvalidRequestIsNotSent(t *testing.T) {
	e := newEnv(t, bookingsim.Config{}, bookingsystem.Options{})
	tests := []struct {
		name string
		mod  func(*bookingsystem.BookingRequest)
	}{
		{"uuid", func(r *bookingsystem.BookingRequest) { r.UUID = "not-a-uuid" }},
		{"hold minutes", func(r *bookingsystem.BookingRequest) { r.HoldExpirationMinutes = 0 }},
		{"no unit items", func(r *bookingsystem.BookingRequest) { r.UnitItems = nil }},
		{"long product id", func(r *bookingsystem.BookingRequest) { r.ProductID = strings.Repeat("p", 1025) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := bookingReq("S1-P2", "2026-11-23T09:00:00Z")
			tt.mod(&req)
			calls := e.sim.Calls()
			if _, err := e.c.CreateBooking(ctx, e.conn, req); !errors.Is(err, bookingsystem.ErrInvalid) || e.sim.Calls() != calls {
				t.Fatalf("err %v, calls %d→%d", err, calls, e.sim.Calls())
			}
		})
	}
}

func TestBookingAnswerBreakingARuleIsInvalid(t *testing.T) {
	e := newEnv(t, bookingsim.Config{Break: []string{bookingsim.BreakStatus}}, bookingsystem.Options{})
	_, err := e.c.CreateBooking(ctx, e.conn, bookingReq("S1-P2", "2026-11-23T09:00:00Z"))
	var ce *bookingsystem.CallError
	if !errors.As(err, &ce) || ce.Kind != bookingsystem.KindInvalid || len(ce.Problems) != 1 || ce.Problems[0].Rule != "status" ||
		!errors.Is(err, bookingsystem.ErrUnavailable) {
		t.Fatalf("err %v", err)
	}
}

func TestOrders_AllOrNothing(t *testing.T) {
	e := newEnv(t, bookingsim.Config{}, bookingsystem.Options{})
	slot := openSlot(t, e, "S1-P2", bookingsystem.OpeningHours)
	book := func(order string, minutes int) bookingsystem.BookingRequest {
		r := bookingReq("S1-P2", slot)
		r.OrderID, r.HoldExpirationMinutes = order, minutes
		if _, err := e.c.CreateBooking(ctx, e.conn, r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	book("O1", 30)
	book("O1", 30)
	o, err := e.c.GetOrder(ctx, e.conn, "S1", "O1")
	if err != nil || o.Status != bookingsystem.OnHold || len(o.Bookings) != 2 || !o.UTCExpiresAt.Equal(t0.Add(30*time.Minute)) {
		t.Fatalf("order %+v %v", o, err)
	}
	o, err = e.c.ExtendOrder(ctx, e.conn, "S1", "O1", bookingsystem.ExtendRequest{Reason: "CUSTOMER_REQUESTED", HoldExpirationMinutes: 60})
	if err != nil || !o.UTCExpiresAt.Equal(t0.Add(60*time.Minute)) {
		t.Fatalf("extend %+v %v", o, err)
	}
	if _, err := e.c.ExtendOrder(ctx, e.conn, "S1", "O1", bookingsystem.ExtendRequest{Reason: "SLOW_RESELLER", HoldExpirationMinutes: 5}); !errors.Is(err, bookingsystem.ErrInvalid) {
		t.Fatalf("extend with a bad reason: %v", err)
	}
	o, err = e.c.ConfirmOrder(ctx, e.conn, "S1", "O1", bookingsystem.ConfirmRequest{})
	if err != nil || o.Status != bookingsystem.Confirmed || o.UTCConfirmedAt == nil ||
		o.Bookings[0].Status != bookingsystem.Confirmed || o.Bookings[1].Status != bookingsystem.Confirmed {
		t.Fatalf("confirm %+v %v", o, err)
	}
	o, err = e.c.CancelOrder(ctx, e.conn, "S1", "O1", bookingsystem.CancelRequest{Reason: "CUSTOMER"})
	if err != nil || o.Status != bookingsystem.Cancelled || o.Bookings[0].Status != bookingsystem.Cancelled || o.Bookings[1].Status != bookingsystem.Cancelled {
		t.Fatalf("cancel %+v %v", o, err)
	}

	book("O2", 30)
	o, err = e.c.CancelOrder(ctx, e.conn, "S1", "O2", bookingsystem.CancelRequest{Reason: "OTHER"})
	if err != nil || o.Status != bookingsystem.Expired || o.Bookings[0].Status != bookingsystem.Expired {
		t.Fatalf("cancel on hold %+v %v", o, err)
	}
	if _, err := e.c.ConfirmOrder(ctx, e.conn, "S1", "O2", bookingsystem.ConfirmRequest{}); !errors.Is(err, bookingsystem.ErrRejected) {
		t.Fatalf("confirm expired: %v", err)
	}

	// One booking's hold has passed: the confirmation fails as a whole.
	a := book("O3", 60)
	b := book("O3", 5)
	e.clock.add(10 * time.Minute)
	if _, err := e.c.ConfirmOrder(ctx, e.conn, "S1", "O3", bookingsystem.ConfirmRequest{}); !errors.Is(err, bookingsystem.ErrRejected) {
		t.Fatalf("confirm with a lapsed booking: %v", err)
	}
	o, err = e.c.GetOrder(ctx, e.conn, "S1", "O3")
	if err != nil || o.Status != bookingsystem.Rejected {
		t.Fatalf("after failed confirm %+v %v", o, err)
	}
	for _, u := range []string{a.UUID, b.UUID} {
		if st := e.sim.BookingStatus(u); st == bookingsystem.Confirmed {
			t.Fatalf("booking %s confirmed by a failed order confirmation", u)
		}
	}
	if _, err := e.c.GetOrder(ctx, e.conn, "S1", "nope"); !errors.Is(err, bookingsystem.ErrNotFound) {
		t.Fatalf("unknown order: %v", err)
	}
}

func TestPriceSchedule(t *testing.T) {
	e := newEnv(t, bookingsim.Config{}, bookingsystem.Options{})
	es, ps, err := e.c.PriceSchedule(ctx, e.conn, bookingsystem.PriceScheduleRequest{SupplierID: "S1", ProductID: "S1-P1",
		LocalDateStart: "2026-11-22", LocalDateEnd: "2027-01-10"})
	if err != nil || len(ps) != 0 || len(es) != 6 || es[0].LocalDateStart != "2026-11-22" || es[2].LocalDateEnd != "2027-01-10" ||
		len(es[0].UnitPricing) != 2 || es[0].UnitPricing[0].Currency != "EUR" {
		t.Fatalf("schedule %+v %v %v", es, ps, err)
	}
}

func TestAuth_FailuresMapToUnavailable(t *testing.T) {
	tests := []struct {
		name, key string
		status    int
	}{
		{"wrong key", "wrong-" + apiKey, 401},
		{"no key", "", 401},
		{"forbidden key", "forbidden-key", 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, bookingsim.Config{ForbiddenKey: "forbidden-key"}, bookingsystem.Options{})
			conn := e.conn
			conn.APIKey = tt.key
			_, _, err := e.c.Products(ctx, conn, "S1", nil)
			var ce *bookingsystem.CallError
			if !errors.As(err, &ce) || ce.Kind != bookingsystem.KindAuth || ce.Status != tt.status || !errors.Is(err, bookingsystem.ErrUnavailable) {
				t.Fatalf("err %v", err)
			}
		})
	}
}

func TestBreaker_OpensAfterFailuresAndClosesAfterCooldown(t *testing.T) {
	e := newEnv(t, bookingsim.Config{ErrorRate: 1}, bookingsystem.Options{BreakerFailures: 3, BreakerCooldown: 10 * time.Second})
	for range 3 {
		if _, _, err := e.c.Products(ctx, e.conn, "S1", nil); !errors.Is(err, bookingsystem.ErrUnavailable) {
			t.Fatalf("err %v", err)
		}
	}
	calls := e.sim.Calls()
	_, _, err := e.c.Products(ctx, e.conn, "S1", nil)
	var ce *bookingsystem.CallError
	if !errors.As(err, &ce) || ce.Kind != bookingsystem.KindBreaker || e.sim.Calls() != calls || !e.c.BreakerOpen(e.conn) {
		t.Fatalf("open breaker: %v, calls %d→%d", err, calls, e.sim.Calls())
	}
	// Another supplier of the same booking system shares the breaker.
	other := e.conn
	other.Endpoint += "/other-supplier-path"
	if !e.c.BreakerOpen(other) {
		t.Fatal("the breaker is per booking system (host), not per endpoint path")
	}
	e.clock.add(11 * time.Second)
	e.sim.Update(func(c *bookingsim.Config) { c.ErrorRate = 0 })
	if _, _, err := e.c.Products(ctx, e.conn, "S1", nil); err != nil {
		t.Fatalf("half-open trial: %v", err)
	}
	if e.c.BreakerOpen(e.conn) {
		t.Fatal("breaker still open after a successful trial")
	}
}

func TestBreaker_RejectionsDoNotCount(t *testing.T) {
	e := newEnv(t, bookingsim.Config{}, bookingsystem.Options{BreakerFailures: 2})
	for range 3 {
		if _, err := e.c.GetBooking(ctx, e.conn, "S1", uuid.NewString()); !errors.Is(err, bookingsystem.ErrNotFound) {
			t.Fatal(err)
		}
	}
	if e.c.BreakerOpen(e.conn) {
		t.Fatal("404 answers opened the breaker")
	}
}

func TestTimeout_IsUnavailable(t *testing.T) {
	e := newEnv(t, bookingsim.Config{Latency: 300 * time.Millisecond}, bookingsystem.Options{Timeout: 30 * time.Millisecond})
	_, _, err := e.c.Suppliers(ctx, e.conn)
	var ce *bookingsystem.CallError
	if !errors.As(err, &ce) || ce.Kind != bookingsystem.KindTimeout {
		t.Fatalf("err %v", err)
	}
}

func TestSecrets_AbsentFromErrors(t *testing.T) {
	e := newEnv(t, bookingsim.Config{EchoSecretsInErrors: true, ForbiddenKey: "forbidden-" + apiKey}, bookingsystem.Options{BreakerFailures: 100})
	var errs []error
	wrong := e.conn
	wrong.APIKey = "wrong-" + apiKey
	_, _, err := e.c.Products(ctx, wrong, "S1", nil)
	errs = append(errs, err)
	forb := e.conn
	forb.APIKey = "forbidden-" + apiKey
	_, _, err = e.c.Suppliers(ctx, forb)
	errs = append(errs, err)
	_, err = e.c.GetOrder(ctx, e.conn, "S1", "nope") // 404 body echoes the header
	errs = append(errs, err)
	_, err = e.c.CreateBooking(ctx, e.conn, bookingReq("S1-P2", "not-a-slot")) // 400
	errs = append(errs, err)
	e.sim.Update(func(c *bookingsim.Config) { c.ErrorRate = 1 })
	_, _, err = e.c.Suppliers(ctx, e.conn) // 500
	errs = append(errs, err)
	withUser := e.conn
	withUser.Endpoint = strings.Replace(withUser.Endpoint, "http://", "http://user:"+apiKey+"@", 1)
	for i, err := range errs {
		if err == nil {
			t.Fatalf("call %d did not fail", i)
		}
		if strings.Contains(err.Error(), apiKey) || strings.Contains(err.Error(), "you sent") {
			t.Fatalf("call %d leaks: %v", i, err)
		}
	}
	if strings.Contains(e.conn.String(), apiKey) || strings.Contains(withUser.String(), apiKey) {
		t.Fatalf("Connection.String leaks: %s %s", e.conn, withUser)
	}
}

// Connection.String is logged at every synchronization: it must show the
// booking system (scheme and host) and nothing a key could hide in.
func TestConnectionString_SchemeAndHostOnly(t *testing.T) {
	tests := []struct {
		name     string
		endpoint string
		want     string
	}{
		{"plain endpoint", "https://bs.example.com", "bookingsystem{https://bs.example.com}"},
		{"key in the path", "https://bs.example.com/v2/" + apiKey + "/suppliers", "bookingsystem{https://bs.example.com}"},
		{"key in userinfo", "https://user:" + apiKey + "@bs.example.com/api", "bookingsystem{https://bs.example.com}"},
		{"key in query and fragment", "http://bs.example.com:8080/x?key=" + apiKey + "#" + apiKey, "bookingsystem{http://bs.example.com:8080}"},
		{"not a URL", "://" + apiKey, "bookingsystem{invalid endpoint}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := bookingsystem.Connection{Endpoint: tt.endpoint, APIKey: apiKey}.String()
			if got != tt.want || strings.Contains(got, apiKey) {
				t.Fatalf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

// A booking system may send availability times in UTC: the local date an
// availability belongs to (the window rule, one range per day) is the
// product's, in its timeZone, as ingest/bookingsync takes it, never the
// offset the time was sent with. 17:00 in Los Angeles is 01:00Z the next
// day.
func TestAvailability_DayIsTheProductsLocalDate(t *testing.T) {
	const la = "America/Los_Angeles"
	zone, err := time.LoadLocation(la)
	if err != nil {
		t.Fatal(err)
	}
	cfg := bookingsim.Config{TimeZone: la, UTCTimes: true, SlotHours: []int{9, 17},
		OpeningRanges: []bookingsim.Range{{From: 9, To: 12}, {From: 17, To: 23}}}
	tests := []struct {
		name, dialect, product, typ string
	}{
		{"v2 START_TIME", bookingsystem.DialectV2, "S1-P1", bookingsystem.StartTime},
		{"v2 OPENING_HOURS", bookingsystem.DialectV2, "S1-P2", bookingsystem.OpeningHours},
		{"OCTO START_TIME", bookingsystem.DialectOCTO, "S1-P1", bookingsystem.StartTime},
		{"OCTO OPENING_HOURS", bookingsystem.DialectOCTO, "S1-P2", bookingsystem.OpeningHours},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c *bookingsystem.Client
			var conn bookingsystem.Connection
			if tt.dialect == bookingsystem.DialectOCTO {
				e := newOCTOEnv(t, cfg, bookingsystem.Options{})
				c, conn = e.c, e.conn
			} else {
				e := newEnv(t, cfg, bookingsystem.Options{})
				c, conn = e.c, e.conn
			}
			req := avReq(tt.product, tt.typ)
			req.TimeZone = la
			as, ps, err := c.Availability(ctx, conn, req)
			if err != nil || len(ps) != 0 || len(as) != 4 { // two a day, two days
				t.Fatalf("%d availabilities, problems %v, err %v; want 4 and none", len(as), ps, err)
			}
			for _, a := range as {
				if d := a.LocalDateTimeStart.In(zone).Format(time.DateOnly); d < req.LocalDateStart || d >= req.LocalDateEnd {
					t.Fatalf("availability %+v: want a Los Angeles date of the window", a)
				}
			}
			if tt.dialect != bookingsystem.DialectOCTO {
				return
			}
			// OCTO prices are read from availabilities: their dates too.
			es, ps, err := c.PriceSchedule(ctx, conn, bookingsystem.PriceScheduleRequest{ProductID: tt.product,
				LocalDateStart: req.LocalDateStart, LocalDateEnd: req.LocalDateEnd})
			if err != nil || len(ps) != 0 || len(es) != 2 || es[0].LocalDateStart != req.LocalDateStart || es[0].LocalDateEnd != req.LocalDateEnd {
				t.Fatalf("price schedule %+v problems %v err %v, want each option over the window", es, ps, err)
			}
		})
	}
}

package bookingsystem_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
)

// request is one request the OCTO simulator received.
type request struct {
	method, path string
	header       http.Header
	body         map[string]any
	raw          string // the body's bytes
}

// recorder keeps the requests a simulator received.
type recorder struct {
	mu   sync.Mutex
	reqs []request
}

func (r *recorder) last() request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reqs[len(r.reqs)-1]
}

func (r *recorder) all() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

type octoEnv struct {
	sim   *bookingsim.Server
	conn  bookingsystem.Connection // supplier S1's OCTO endpoint
	base  string                   // the simulator's address
	c     *bookingsystem.Client
	clock *clock
	rec   *recorder
}

// newOCTOEnv serves cfg in the OCTO dialect on a loopback port; the
// connection is supplier S1's endpoint (<base>/S1).
func newOCTOEnv(t *testing.T, cfg bookingsim.Config, opts bookingsystem.Options) octoEnv {
	t.Helper()
	ck := newClock()
	cfg.APIKey, cfg.Clock, cfg.Dialect = apiKey, ck.now, bookingsim.DialectOCTO
	sim := bookingsim.New(cfg)
	rec := &recorder{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, request{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: body, raw: string(raw)})
		rec.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(raw)))
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	if opts.Clock == nil {
		opts.Clock = ck.now
	}
	// The simulator listens on loopback over http.
	opts.Outbound = allowLoopback
	return octoEnv{sim: sim, base: ts.URL, c: bookingsystem.NewClient(opts), clock: ck, rec: rec,
		conn: bookingsystem.Connection{Endpoint: ts.URL + "/S1", APIKey: apiKey, Dialect: bookingsystem.DialectOCTO}}
}

// octoSlot is an availability of product's first option that can take a
// booking of two units.
func octoSlot(t *testing.T, e octoEnv, product, typ string) string {
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

func typeOf(product string) string {
	if product == "S1-P2" || product == "S1-P4" {
		return bookingsystem.OpeningHours
	}
	return bookingsystem.StartTime
}

func TestOCTO_SupplierAndProducts_PathsAndCapabilitiesHeader(t *testing.T) {
	e := newOCTOEnv(t, bookingsim.Config{}, bookingsystem.Options{})
	sups, ps, err := e.c.Suppliers(ctx, e.conn)
	if err != nil || len(ps) != 0 || len(sups) != 1 || sups[0].ID != "S1" || sups[0].Endpoint != e.conn.Endpoint {
		t.Fatalf("supplier %+v problems %v err %v", sups, ps, err)
	}
	if r := e.rec.last(); r.method != "GET" || r.path != "/S1/supplier" || r.header.Get("Authorization") != "Bearer "+apiKey {
		t.Fatalf("supplier request %s %s auth %q", r.method, r.path, r.header.Get("Authorization"))
	}
	prods, ps, err := e.c.Products(ctx, e.conn, "S1", []string{"octo/pricing", "octo/content"})
	if err != nil || len(ps) != 0 || len(prods) != 4 {
		t.Fatalf("products %d problems %v err %v", len(prods), ps, err)
	}
	r := e.rec.last()
	if r.path != "/S1/products" || r.header.Get("Octo-Capabilities") != "octo/pricing,octo/content" || r.header.Get("X-Capabilities") != "" {
		t.Fatalf("products request %s Octo-Capabilities %q X-Capabilities %q", r.path, r.header.Get("Octo-Capabilities"), r.header.Get("X-Capabilities"))
	}
	if prods[0].AvailabilityType != bookingsystem.StartTime || prods[1].AvailabilityType != bookingsystem.OpeningHours ||
		prods[2].InstantConfirmation || len(prods[0].Options) != 2 || len(prods[0].Options[0].Units) != 2 {
		t.Fatalf("unexpected products %+v", prods)
	}
	if _, _, err := e.c.Products(ctx, e.conn, "S1", nil); err != nil || e.rec.last().header.Get("Octo-Capabilities") != "" {
		t.Fatalf("no capabilities asked: header %q err %v", e.rec.last().header.Get("Octo-Capabilities"), err)
	}
	other := e.conn
	other.Endpoint = e.base + "/S9"
	if _, _, err := e.c.Products(ctx, other, "S9", nil); !errors.Is(err, bookingsystem.ErrNotFound) {
		t.Fatalf("unknown supplier endpoint: %v", err)
	}
}

// The OCTO dialect serves the same inventory as v2: the client reads the
// same availabilities through either.
func TestOCTO_Availability_SameInventoryAsV2(t *testing.T) {
	v2 := newEnv(t, bookingsim.Config{}, bookingsystem.Options{})
	oc := newOCTOEnv(t, bookingsim.Config{}, bookingsystem.Options{})
	tests := []struct {
		product string
		n       int
	}{{"S1-P1", 6}, {"S1-P2", 4}}
	for _, tt := range tests {
		t.Run(tt.product, func(t *testing.T) {
			req := avReq(tt.product, typeOf(tt.product))
			want, _, err := v2.c.Availability(ctx, v2.conn, req)
			if err != nil {
				t.Fatal(err)
			}
			got, ps, err := oc.c.Availability(ctx, oc.conn, req)
			if err != nil || len(ps) != 0 || len(got) != tt.n || len(want) != tt.n {
				t.Fatalf("got %d (problems %v, err %v), v2 %d, want %d", len(got), ps, err, len(want), tt.n)
			}
			r := oc.rec.last()
			if r.method != "POST" || r.path != "/S1/availability" || r.body["localDateStart"] != "2026-11-23" ||
				r.body["localDateEnd"] != "2026-11-24" || r.body["optionId"] != req.OptionID || r.body["productId"] != req.ProductID {
				t.Fatalf("request %s %s %v (OCTO's localDateEnd is inclusive)", r.method, r.path, r.body)
			}
			for i := range got {
				g, w := got[i], want[i]
				if g.ID != w.ID || g.OptionID != req.OptionID || !g.LocalDateTimeStart.Equal(w.LocalDateTimeStart) ||
					!g.LocalDateTimeEnd.Equal(w.LocalDateTimeEnd) || g.Status != w.Status || !reflect.DeepEqual(g.Vacancies, w.Vacancies) {
					t.Fatalf("item %d: OCTO %+v, v2 %+v", i, g, w)
				}
				if (g.Status == bookingsystem.Freesale) != (g.Capacity == nil) {
					t.Fatalf("item %d: capacity %v with status %s", i, g.Capacity, g.Status)
				}
			}
		})
	}
}

func TestOCTO_CheckAvailability_UnitsFitOrNot(t *testing.T) {
	e := newOCTOEnv(t, bookingsim.Config{MaxCapacity: 1000}, bookingsystem.Options{})
	as, _, err := e.c.Availability(ctx, e.conn, avReq("S1-P1", bookingsystem.StartTime))
	if err != nil {
		t.Fatal(err)
	}
	var slot bookingsystem.Availability
	for _, a := range as {
		if a.Status == bookingsystem.Available && *a.Vacancies >= 2 {
			slot = a
			break
		}
	}
	if slot.ID == "" {
		t.Fatal("no AVAILABLE slot")
	}
	tests := []struct {
		name     string
		quantity int
		want     bool
	}{
		{"exactly the vacancies", *slot.Vacancies, true},
		{"one more than the vacancies", *slot.Vacancies + 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ps, err := e.c.CheckAvailability(ctx, e.conn, bookingsystem.AvailabilityCheck{
				SupplierID: "S1", AvailabilityType: bookingsystem.StartTime, ProductID: "S1-P1", OptionID: "S1-P1-O1",
				AvailabilityIDs: []string{slot.ID}, Units: []bookingsystem.UnitQuantity{{UnitID: "adult", Quantity: tt.quantity}},
			})
			if err != nil || len(ps) != 0 || len(got) != 1 || got[0].ID != slot.ID || got[0].Available == nil || *got[0].Available != tt.want {
				t.Fatalf("check: %+v %v %v", got, ps, err)
			}
			r := e.rec.last()
			units, _ := r.body["units"].([]any)
			ids, _ := r.body["availabilityIds"].([]any)
			if r.path != "/S1/availability" || len(units) != 1 || len(ids) != 1 || ids[0] != slot.ID ||
				units[0].(map[string]any)["id"] != "adult" || units[0].(map[string]any)["quantity"] != float64(tt.quantity) {
				t.Fatalf("request %s %v", r.path, r.body)
			}
		})
	}
}

func octoBookingReq(product, slot string) bookingsystem.BookingRequest {
	r := bookingReq(product, slot)
	r.SupplierID = "" // not in OCTO paths
	return r
}

func TestOCTO_BookingStateMachine(t *testing.T) {
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
		{"hold, confirm, cancel", "S1-P2", []step{{"create", "ON_HOLD", nil}, {"confirm", "CONFIRMED", nil}, {"get", "CONFIRMED", nil}, {"cancel", "CANCELLED", nil}}},
		{"confirm retried answers the same", "S1-P2", []step{{"create", "ON_HOLD", nil}, {"confirm", "CONFIRMED", nil}, {"confirm", "CONFIRMED", nil}}},
		{"released before confirmation expires", "S1-P2", []step{{"create", "ON_HOLD", nil}, {"cancel", "EXPIRED", nil}, {"confirm", "", bookingsystem.ErrRejected}}},
		{"hold lapses", "S1-P2", []step{{"create", "ON_HOLD", nil}, {"lapse", "EXPIRED", nil}, {"confirm", "", bookingsystem.ErrRejected}}},
		{"cancelled cannot be confirmed", "S1-P1", []step{{"create", "ON_HOLD", nil}, {"confirm", "CONFIRMED", nil}, {"cancel", "CANCELLED", nil}, {"confirm", "", bookingsystem.ErrRejected}}},
		{"pending accepted", "S1-P3", []step{{"create", "ON_HOLD", nil}, {"confirm", "PENDING", nil}, {"accept", "CONFIRMED", nil}}},
		{"pending rejected", "S1-P3", []step{{"create", "ON_HOLD", nil}, {"confirm", "PENDING", nil}, {"reject", "REJECTED", nil}, {"cancel", "", bookingsystem.ErrRejected}}},
		{"pending cannot be cancelled", "S1-P3", []step{{"create", "ON_HOLD", nil}, {"confirm", "PENDING", nil}, {"cancel", "", bookingsystem.ErrRejected}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newOCTOEnv(t, bookingsim.Config{}, bookingsystem.Options{})
			req := octoBookingReq(tt.product, octoSlot(t, e, tt.product, typeOf(tt.product)))
			for i, s := range tt.steps {
				var b bookingsystem.Booking
				var err error
				switch s.op {
				case "create":
					b, err = e.c.CreateBooking(ctx, e.conn, req)
				case "confirm":
					b, err = e.c.ConfirmBooking(ctx, e.conn, "", req.UUID, bookingsystem.ConfirmRequest{})
				case "cancel":
					b, err = e.c.CancelBooking(ctx, e.conn, "", req.UUID, bookingsystem.CancelRequest{Reason: "CUSTOMER"})
				case "get":
					b, err = e.c.GetBooking(ctx, e.conn, "", req.UUID)
				case "lapse":
					e.clock.add(31 * time.Minute)
					b, err = e.c.GetBooking(ctx, e.conn, "", req.UUID)
				case "accept", "reject":
					if err := e.sim.Decide(req.UUID, s.op == "accept"); err != nil {
						t.Fatal(err)
					}
					b, err = e.c.GetBooking(ctx, e.conn, "", req.UUID)
				}
				if s.wantErr != nil {
					if !errors.Is(err, s.wantErr) {
						t.Fatalf("step %d %s: err %v, want %v", i, s.op, err, s.wantErr)
					}
					continue
				}
				if err != nil || b.Status != s.want || b.UUID != req.UUID || b.ProductID != req.ProductID ||
					b.Availability == nil || b.Availability.ID != req.AvailabilityID || len(b.UnitItems) != 1 {
					t.Fatalf("step %d %s: %+v err %v, want %q", i, s.op, b, err, s.want)
				}
			}
		})
	}
}

func TestOCTO_CreateBooking_IdempotentByUUID(t *testing.T) {
	e := newOCTOEnv(t, bookingsim.Config{}, bookingsystem.Options{})
	req := octoBookingReq("S1-P2", octoSlot(t, e, "S1-P2", bookingsystem.OpeningHours))
	req.ResellerReference, req.Notes = "R-1", "window seat"
	first, err := e.c.CreateBooking(ctx, e.conn, req)
	if err != nil || first.Status != bookingsystem.OnHold || first.UTCHoldExpiration == nil ||
		!first.UTCHoldExpiration.Equal(t0.Add(30*time.Minute)) || first.ResellerReference == nil || *first.ResellerReference != "R-1" {
		t.Fatalf("first: %+v %v", first, err)
	}
	again, err := e.c.CreateBooking(ctx, e.conn, req)
	if err != nil || again.UUID != first.UUID || *again.SupplierReference != *first.SupplierReference || e.sim.Bookings() != 1 {
		t.Fatalf("retry: %+v %v (bookings %d)", again, err, e.sim.Bookings())
	}
	tests := []struct {
		name string
		mod  func(*bookingsystem.BookingRequest)
	}{
		{"other reseller reference", func(r *bookingsystem.BookingRequest) { r.ResellerReference = "R-2" }},
		{"other notes", func(r *bookingsystem.BookingRequest) { r.Notes = "aisle" }},
		{"other hold", func(r *bookingsystem.BookingRequest) { r.HoldExpirationMinutes = 45 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			other := req
			tt.mod(&other)
			_, err := e.c.CreateBooking(ctx, e.conn, other)
			var ce *bookingsystem.CallError
			// OCTO answers 400 INVALID_BOOKING_UUID: on create it is a
			// rejection, not an unknown booking.
			if !errors.Is(err, bookingsystem.ErrRejected) || errors.Is(err, bookingsystem.ErrNotFound) || !errors.As(err, &ce) ||
				ce.Status != 400 || e.sim.Bookings() != 1 {
				t.Fatalf("other data: %v", err)
			}
		})
	}
}

// The request bodies' bytes: internal/octowire's shapes (field order,
// omitempty) write what the client's own structs wrote before they moved
// there; a change of a shape shows here.
func TestOCTO_RequestBodies_KeepTheirBytes(t *testing.T) {
	e := newOCTOEnv(t, bookingsim.Config{}, bookingsystem.Options{})
	slot := octoSlot(t, e, "S1-P1", bookingsystem.StartTime)
	req := octoBookingReq("S1-P1", slot)
	req.Notes, req.UnitItems = "window seat", []bookingsystem.UnitItem{{UnitID: "adult"}}
	ref := "RR-1"
	tests := []struct {
		name string
		do   func() error
		want string
	}{
		{"availability by dates", func() error {
			_, _, err := e.c.Availability(ctx, e.conn, bookingsystem.AvailabilityRequest{ProductID: "S1-P1", OptionID: "S1-P1-O1",
				LocalDateStart: "2026-11-23", LocalDateEnd: "2026-11-25", AvailabilityType: bookingsystem.StartTime})
			return err
		}, `{"productId":"S1-P1","optionId":"S1-P1-O1","localDateStart":"2026-11-23","localDateEnd":"2026-11-24"}`},
		{"availability check", func() error {
			_, _, err := e.c.CheckAvailability(ctx, e.conn, bookingsystem.AvailabilityCheck{ProductID: "S1-P1", OptionID: "S1-P1-O1",
				AvailabilityType: bookingsystem.StartTime, AvailabilityIDs: []string{slot}, Units: []bookingsystem.UnitQuantity{{UnitID: "adult", Quantity: 2}}})
			return err
		}, `{"productId":"S1-P1","optionId":"S1-P1-O1","availabilityIds":["` + slot + `"],"units":[{"id":"adult","quantity":2}]}`},
		{"reservation", func() error { _, err := e.c.CreateBooking(ctx, e.conn, req); return err },
			`{"uuid":"` + req.UUID + `","productId":"S1-P1","optionId":"S1-P1-O1","availabilityId":"` + slot +
				`","unitItems":[{"unitId":"adult"}],"expirationMinutes":30,"notes":"window seat"}`},
		{"extension", func() error { _, err := e.c.ExtendBooking(ctx, e.conn, req.UUID, 45); return err }, `{"expirationMinutes":45}`},
		{"confirmation", func() error {
			_, err := e.c.ConfirmBooking(ctx, e.conn, "", req.UUID, bookingsystem.ConfirmRequest{ResellerReference: ref,
				UnitItems: []bookingsystem.UnitItem{{UUID: "u-1", UnitID: "adult", ResellerReference: &ref}}})
			return err
		}, `{"contact":{"fullName":null,"firstName":null,"lastName":null,"emailAddress":null,"phoneNumber":null},"resellerReference":"RR-1",` +
			`"unitItems":[{"uuid":"u-1","unitId":"adult","resellerReference":"RR-1"}]}`},
		{"cancellation", func() error {
			_, err := e.c.CancelBooking(ctx, e.conn, "", req.UUID, bookingsystem.CancelRequest{Reason: "CUSTOMER"})
			return err
		}, `{"reason":"CUSTOMER"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_ = tt.do() // the simulator's answer does not matter here: what was sent does
			if got := e.rec.last().raw; got != tt.want {
				t.Errorf("body\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// What goes on the wire: OCTO's paths, methods and bodies, no doc 3 field.
func TestOCTO_BookingRequests_OnTheWire(t *testing.T) {
	e := newOCTOEnv(t, bookingsim.Config{}, bookingsystem.Options{})
	req := octoBookingReq("S1-P2", octoSlot(t, e, "S1-P2", bookingsystem.OpeningHours))
	req.Notes = "window seat"
	name := "Ada Lovelace"
	calls := []struct {
		name       string
		do         func() error
		method     string
		path       string
		wantFields map[string]any
		noFields   []string
	}{
		{"create", func() error { _, err := e.c.CreateBooking(ctx, e.conn, req); return err }, "POST", "/S1/bookings",
			map[string]any{"uuid": req.UUID, "availabilityId": req.AvailabilityID, "expirationMinutes": float64(30), "notes": "window seat"},
			[]string{"holdExpirationMinutes", "channelId", "channelName", "orderId"}},
		{"get", func() error { _, err := e.c.GetBooking(ctx, e.conn, "", req.UUID); return err }, "GET", "/S1/bookings/" + req.UUID, nil, nil},
		{"confirm without contact sends an empty one", func() error {
			_, err := e.c.ConfirmBooking(ctx, e.conn, "", req.UUID, bookingsystem.ConfirmRequest{Contact: &bookingsystem.Contact{FullName: &name}})
			return err
		}, "POST", "/S1/bookings/" + req.UUID + "/confirm", map[string]any{"contact": map[string]any{"fullName": name, "firstName": nil,
			"lastName": nil, "emailAddress": nil, "phoneNumber": nil}}, nil},
		{"cancel", func() error {
			_, err := e.c.CancelBooking(ctx, e.conn, "", req.UUID, bookingsystem.CancelRequest{Reason: "CUSTOMER", ReasonDetails: "ill"})
			return err
		}, "POST", "/S1/bookings/" + req.UUID + "/cancel", map[string]any{"reason": "CUSTOMER: ill"}, []string{"reasonDetails"}},
	}
	for _, tt := range calls {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.do(); err != nil {
				t.Fatal(err)
			}
			r := e.rec.last()
			if r.method != tt.method || r.path != tt.path {
				t.Fatalf("%s %s, want %s %s", r.method, r.path, tt.method, tt.path)
			}
			for k, v := range tt.wantFields {
				if !reflect.DeepEqual(r.body[k], v) {
					t.Errorf("%s = %#v, want %#v", k, r.body[k], v)
				}
			}
			for _, k := range tt.noFields {
				if _, ok := r.body[k]; ok {
					t.Errorf("field %s sent", k)
				}
			}
		})
	}
	b, err := e.c.GetBooking(ctx, e.conn, "", req.UUID)
	if err != nil || b.Status != bookingsystem.Cancelled || b.CancellationRequest == nil || b.CancellationRequest.Reason != "CUSTOMER: ill" ||
		b.Contact == nil || b.Contact.FullName == nil || *b.Contact.FullName != name {
		t.Fatalf("booking after cancel %+v %v", b, err)
	}
}

func TestOCTO_UnknownBookingIsNotFound(t *testing.T) {
	e := newOCTOEnv(t, bookingsim.Config{}, bookingsystem.Options{BreakerFailures: 2})
	id := uuid.NewString()
	tests := []struct {
		name string
		do   func() error
	}{
		{"get", func() error { _, err := e.c.GetBooking(ctx, e.conn, "", id); return err }},
		{"confirm", func() error {
			_, err := e.c.ConfirmBooking(ctx, e.conn, "", id, bookingsystem.ConfirmRequest{})
			return err
		}},
		{"cancel", func() error {
			_, err := e.c.CancelBooking(ctx, e.conn, "", id, bookingsystem.CancelRequest{Reason: "OTHER"})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			var ce *bookingsystem.CallError
			if !errors.Is(err, bookingsystem.ErrNotFound) || !errors.As(err, &ce) || ce.Status != 400 || ce.ErrorCode() != "NOT_FOUND" {
				t.Fatalf("err %v", err)
			}
		})
	}
	if e.c.BreakerOpen(e.conn) {
		t.Fatal("unknown bookings opened the breaker")
	}
}

func TestOCTO_OrdersAreUnsupported(t *testing.T) {
	e := newOCTOEnv(t, bookingsim.Config{}, bookingsystem.Options{})
	withOrder := octoBookingReq("S1-P2", "2026-11-23T09:00:00Z")
	withOrder.OrderID = "O1"
	tests := []struct {
		name string
		sim  *bookingsim.Server
		do   func() error
	}{
		{"get order", e.sim, func() error { _, err := e.c.GetOrder(ctx, e.conn, "S1", "O1"); return err }},
		{"confirm order", e.sim, func() error {
			_, err := e.c.ConfirmOrder(ctx, e.conn, "S1", "O1", bookingsystem.ConfirmRequest{})
			return err
		}},
		{"cancel order", e.sim, func() error {
			_, err := e.c.CancelOrder(ctx, e.conn, "S1", "O1", bookingsystem.CancelRequest{Reason: "OTHER"})
			return err
		}},
		{"extend order", e.sim, func() error {
			_, err := e.c.ExtendOrder(ctx, e.conn, "S1", "O1", bookingsystem.ExtendRequest{Reason: "OTHER", HoldExpirationMinutes: 5})
			return err
		}},
		{"booking in an order", e.sim, func() error { _, err := e.c.CreateBooking(ctx, e.conn, withOrder); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := tt.sim.Calls()
			err := tt.do()
			var ce *bookingsystem.CallError
			if !errors.Is(err, bookingsystem.ErrUnsupported) || !errors.As(err, &ce) || ce.ErrorCode() != "BAD_REQUEST" ||
				ce.Kind != bookingsystem.KindRequest || tt.sim.Calls() != calls {
				t.Fatalf("err %v, calls %d→%d", err, calls, tt.sim.Calls())
			}
		})
	}
}

func TestOCTO_DataRules_RejectedItemByItem(t *testing.T) {
	tests := []struct {
		brk       string
		product   string // "" for the products list
		wantRules []string
		wantValid int
	}{
		{bookingsim.BreakIDLength, "", []string{"id_length"}, 4},
		{bookingsim.BreakAvailabilityTyp, "", []string{"availability_type"}, 4},
		{bookingsim.BreakIDLength, "S1-P1", []string{"id_length"}, 5},
		// Doc 3's own rules do not apply to OCTO, which allows any status
		// on either availability type and separate availabilities whose
		// ranges touch: accepted, nothing rejected.
		{bookingsim.BreakStartTimeFree, "S1-P1", nil, 6},
		{bookingsim.BreakOpeningNotFree, "S1-P2", nil, 4},
		{bookingsim.BreakVacancies, "S1-P1", []string{"vacancies_negative"}, 5},
		{bookingsim.BreakStatus, "S1-P1", []string{"status"}, 5},
		{bookingsim.BreakTimeRange, "S1-P1", []string{"time_range"}, 5},
		{bookingsim.BreakDuplicateID, "S1-P1", []string{"duplicate_id", "duplicate_id"}, 5},
		{bookingsim.BreakContiguous, "S1-P2", nil, 5},
		{bookingsim.BreakFractions, "S1-P1", nil, 6},
	}
	for _, tt := range tests {
		t.Run(tt.brk+"/"+tt.product, func(t *testing.T) {
			e := newOCTOEnv(t, bookingsim.Config{Break: []string{tt.brk}}, bookingsystem.Options{})
			var ps []bookingsystem.Problem
			var valid int
			var err error
			if tt.product == "" {
				var prods []bookingsystem.Product
				prods, ps, err = e.c.Products(ctx, e.conn, "", nil)
				valid = len(prods)
			} else {
				var as []bookingsystem.Availability
				as, ps, err = e.c.Availability(ctx, e.conn, avReq(tt.product, typeOf(tt.product)))
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
			}
			if !slices.Equal(rules, tt.wantRules) || valid != tt.wantValid {
				t.Fatalf("rules %v valid %d, want %v %d (problems %v)", rules, valid, tt.wantRules, tt.wantValid, ps)
			}
		})
	}
}

func TestOCTO_BookingAnswerBreakingARuleIsInvalid(t *testing.T) {
	e := newOCTOEnv(t, bookingsim.Config{Break: []string{bookingsim.BreakStatus}}, bookingsystem.Options{})
	_, err := e.c.CreateBooking(ctx, e.conn, octoBookingReq("S1-P2", "2026-11-23T09:00:00Z"))
	var ce *bookingsystem.CallError
	if !errors.As(err, &ce) || ce.Kind != bookingsystem.KindInvalid || len(ce.Problems) != 1 || ce.Problems[0].Rule != "status" ||
		!errors.Is(err, bookingsystem.ErrUnavailable) {
		t.Fatalf("err %v", err)
	}
}

// OCTO's prices come per availability (octo/pricing); the derived schedule
// equals the one v2's price-schedule read gives for the same inventory.
func TestOCTO_PriceSchedule_DerivedFromAvailabilityPricing(t *testing.T) {
	v2 := newEnv(t, bookingsim.Config{}, bookingsystem.Options{})
	oc := newOCTOEnv(t, bookingsim.Config{}, bookingsystem.Options{})
	for _, product := range []string{"S1-P1", "S1-P2"} {
		t.Run(product, func(t *testing.T) {
			in := bookingsystem.PriceScheduleRequest{SupplierID: "S1", ProductID: product, LocalDateStart: "2026-11-22", LocalDateEnd: "2027-01-10"}
			want, _, err := v2.c.PriceSchedule(ctx, v2.conn, in)
			if err != nil || len(want) != 6 {
				t.Fatalf("v2: %d %v", len(want), err)
			}
			before := len(oc.rec.all())
			got, ps, err := oc.c.PriceSchedule(ctx, oc.conn, in)
			if err != nil || len(ps) != 0 || !reflect.DeepEqual(got, want) {
				t.Fatalf("OCTO schedule %+v problems %v err %v,\nwant %+v", got, ps, err, want)
			}
			reqs := oc.rec.all()[before:]
			if len(reqs) != 3 || reqs[0].path != "/S1/products/"+product {
				t.Fatalf("%d requests, first %s", len(reqs), reqs[0].path)
			}
			for _, r := range reqs[1:] {
				if r.path != "/S1/availability" || r.header.Get("Octo-Capabilities") != "octo/pricing" || r.body["localDateEnd"] != "2027-01-09" {
					t.Fatalf("pricing read %s %q %v", r.path, r.header.Get("Octo-Capabilities"), r.body)
				}
			}
		})
	}
	_, _, err := oc.c.PriceSchedule(ctx, oc.conn, bookingsystem.PriceScheduleRequest{ProductID: "S1-P9", LocalDateStart: "2026-11-22", LocalDateEnd: "2026-12-01"})
	if !errors.Is(err, bookingsystem.ErrNotFound) {
		t.Fatalf("unknown product: %v", err)
	}
}

func TestOCTO_AuthAndDialect(t *testing.T) {
	e := newOCTOEnv(t, bookingsim.Config{ForbiddenKey: "forbidden-key"}, bookingsystem.Options{})
	tests := []struct {
		name, key, dialect string
		kind               string
		status             int
	}{
		{"wrong key", "wrong-" + apiKey, bookingsystem.DialectOCTO, bookingsystem.KindAuth, 401},
		{"forbidden key", "forbidden-key", bookingsystem.DialectOCTO, bookingsystem.KindAuth, 403},
		{"unknown dialect is not sent", apiKey, "OCTO", bookingsystem.KindRequest, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn := e.conn
			conn.APIKey, conn.Dialect = tt.key, tt.dialect
			calls := e.sim.Calls()
			_, _, err := e.c.Suppliers(ctx, conn)
			var ce *bookingsystem.CallError
			if !errors.As(err, &ce) || ce.Kind != tt.kind || ce.Status != tt.status || !errors.Is(err, bookingsystem.ErrUnavailable) ||
				strings.Contains(err.Error(), apiKey) {
				t.Fatalf("err %v", err)
			}
			if sent := e.sim.Calls() - calls; (tt.status == 0) != (sent == 0) {
				t.Fatalf("%d calls sent", sent)
			}
		})
	}
}

// An OCTO supplier that sends an OPENING_HOURS day with its openingHours
// (lunch break: 09–12 and 13–18) gives one availability per range (doc 3
// rule 2); a range is booked and checked as the OCTO day it belongs to.
func TestOCTO_OpeningHoursOfADayAreOneAvailabilityPerRange(t *testing.T) {
	e := newOCTOEnv(t, bookingsim.Config{TimeZone: "Europe/Paris", OCTOOpeningHoursByDay: true}, bookingsystem.Options{})
	req := avReq("S1-P2", bookingsystem.OpeningHours)
	req.TimeZone = "Europe/Paris"
	as, ps, err := e.c.Availability(ctx, e.conn, req)
	if err != nil || len(ps) != 0 || len(as) != 4 {
		t.Fatalf("%d availabilities, problems %v, err %v; want 2 ranges × 2 days", len(as), ps, err)
	}
	want := []string{"2026-11-23T09:00:00+01:00", "2026-11-23T13:00:00+01:00", "2026-11-24T09:00:00+01:00", "2026-11-24T13:00:00+01:00"}
	ids := map[string]bool{}
	for i, a := range as {
		day := a.LocalDateTimeStart.Format(time.DateOnly) + "T00:00:00+01:00"
		if a.LocalDateTimeStart.Format(time.RFC3339) != want[i] || a.AllDay || ids[a.ID] || bookingsystem.OCTOAvailabilityID(a.ID) != day {
			t.Fatalf("availability %d %+v: want a range starting %s, of the day %s, with an id of its own", i, a, want[i], day)
		}
		ids[a.ID] = true
	}
	afternoon := as[1]
	tests := []struct {
		name string
		do   func() (string, error) // the availability id of the answer
	}{
		{"check the units of one range", func() (string, error) {
			got, ps, err := e.c.CheckAvailability(ctx, e.conn, bookingsystem.AvailabilityCheck{AvailabilityType: bookingsystem.OpeningHours,
				TimeZone: "Europe/Paris", ProductID: "S1-P2", OptionID: "S1-P2-O1", AvailabilityIDs: []string{afternoon.ID},
				Units: []bookingsystem.UnitQuantity{{UnitID: "adult", Quantity: 2}}})
			if err == nil && (len(ps) != 0 || len(got) != 1 || got[0].Available == nil || !*got[0].Available) {
				t.Fatalf("check: %+v problems %v, want the range asked for only", got, ps)
			}
			if err != nil {
				return "", err
			}
			return got[0].ID, nil
		}},
		{"book one range", func() (string, error) {
			b, err := e.c.CreateBooking(ctx, e.conn, octoBookingReq("S1-P2", afternoon.ID))
			if err != nil {
				return "", err
			}
			if b.Status != bookingsystem.OnHold || b.Availability == nil {
				t.Fatalf("booking %+v", b)
			}
			return b.Availability.ID, nil
		}},
	}
	day := bookingsystem.OCTOAvailabilityID(afternoon.ID)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.do()
			if err != nil {
				t.Fatal(err)
			}
			if sent, _ := e.rec.last().body["availabilityIds"].([]any); sent == nil && e.rec.last().body["availabilityId"] != day {
				t.Fatalf("sent %v, want OCTO's day id %s", e.rec.last().body, day)
			} else if sent != nil && (len(sent) != 1 || sent[0] != day) {
				t.Fatalf("sent availabilityIds %v, want [%s]", sent, day)
			}
			if got != afternoon.ID && got != e.conn.BookingAvailabilityID(afternoon.ID) {
				t.Fatalf("answer names %q, want the range %q or (a booking) its day", got, afternoon.ID)
			}
		})
	}
}

func TestProduct_OneProductOfAnOCTOSupplier(t *testing.T) {
	e := newOCTOEnv(t, bookingsim.Config{}, bookingsystem.Options{})
	v2 := newEnv(t, bookingsim.Config{}, bookingsystem.Options{})
	tests := []struct {
		name    string
		env     func() (*bookingsystem.Client, bookingsystem.Connection, *bookingsim.Server)
		product string
		wantErr error
	}{
		{"OCTO product", func() (*bookingsystem.Client, bookingsystem.Connection, *bookingsim.Server) {
			return e.c, e.conn, e.sim
		}, "S1-P2", nil},
		{"OCTO unknown product", func() (*bookingsystem.Client, bookingsystem.Connection, *bookingsim.Server) {
			return e.c, e.conn, e.sim
		}, "S1-P9", bookingsystem.ErrNotFound},
		{"v2 has no read of one product", func() (*bookingsystem.Client, bookingsystem.Connection, *bookingsim.Server) {
			return v2.c, v2.conn, v2.sim
		}, "S1-P2", bookingsystem.ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, conn, sim := tt.env()
			calls := sim.Calls()
			p, ps, err := c.Product(ctx, conn, "S1", tt.product, []string{"octo/pricing"})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err %v, want %v", err, tt.wantErr)
				}
				if errors.Is(err, bookingsystem.ErrUnsupported) && sim.Calls() != calls {
					t.Fatal("an unsupported call was sent")
				}
				return
			}
			if err != nil || len(ps) != 0 || p.ID != tt.product || len(p.Options) != 2 || len(p.Options[0].Units) != 2 {
				t.Fatalf("product %+v problems %v err %v", p, ps, err)
			}
			if r := e.rec.last(); r.method != "GET" || r.path != "/S1/products/"+tt.product || r.header.Get("Octo-Capabilities") != "octo/pricing" {
				t.Fatalf("request %s %s capabilities %q", r.method, r.path, r.header.Get("Octo-Capabilities"))
			}
		})
	}
}

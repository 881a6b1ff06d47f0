package supplierbooking

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
	"github.com/switchbackhq/switchback/internal/simulators/partnersim"
	"github.com/switchbackhq/switchback/schemas"
)

func TestCreateHold_RetryWithTheSameIDIsTheSameBookings(t *testing.T) {
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			e := startDialect(t, dialect)
			h := schemas.Hold{ID: "hold-retry", Items: []schemas.HoldItem{item("S1-P2", 1, e.freeSlot(), 2), item("S1-P2", 2, e.freeSlot(), 1)}}
			var first schemas.Hold
			for attempt := range 3 {
				got, err := e.router.CreateHoldFor(ctx, sid, catalogtest.ChannelA, h, "req")
				if err != nil {
					t.Fatalf("attempt %d: %v", attempt, err)
				}
				if attempt == 0 {
					first = got
				}
				switch {
				case got.ID != h.ID || got.Status != schemas.HoldActive || len(got.Items) != 2:
					t.Fatalf("attempt %d: hold %+v", attempt, got)
				case !got.Expires.Equal(first.Expires) || !got.Expires.Equal(e.clock.now().Add(15*time.Minute)):
					t.Fatalf("attempt %d: expires %s, want %s (rate holdablePeriod 900 s)", attempt, got.Expires, e.clock.now().Add(15*time.Minute))
				case e.sim.Bookings() != 2:
					t.Fatalf("attempt %d: the simulator has %d bookings, want 2 (doc 3 rule 4)", attempt, e.sim.Bookings())
				}
			}
			for _, b := range e.holdBookings(t, h.ID, 2) {
				switch {
				case b.Status != bookingsystem.OnHold || len(b.UnitItems) == 0 || b.UnitItems[0].UnitID != "adult" ||
					b.ResellerReference == nil || *b.ResellerReference != h.ID:
					t.Fatalf("booking %+v: want ON_HOLD, unit adult (the option's first) and the hold id as reference", b)
				case dialect == bookingsystem.DialectV2 && b.ChannelID != ChannelUUID(catalogtest.ChannelA): // OCTO has no channel
					t.Fatalf("booking %+v: want the channel's uuid", b)
				}
			}
			if dialect == bookingsystem.DialectV2 {
				o, err := e.bsc.GetOrder(ctx, e.conn, sid, OrderID(h.ID))
				if err != nil || o.Status != bookingsystem.OnHold || len(o.Bookings) != 2 {
					t.Fatalf("order %+v err %v", o, err)
				}
			}
		})
	}
}

// holdBookings reads the hold's n bookings at the simulator, by uuid
// (either dialect).
func (e *env) holdBookings(t *testing.T, holdID string, n int) []bookingsystem.Booking {
	t.Helper()
	out := make([]bookingsystem.Booking, n)
	for i := range out {
		b, err := e.bsc.GetBooking(ctx, e.conn, sid, BookingUUID(holdID, i))
		if err != nil {
			t.Fatalf("booking %d of %s: %v", i, holdID, err)
		}
		out[i] = b
	}
	return out
}

func TestCreateHold_SameIDWithOtherDataIsBadRequestAndKeepsTheFirst(t *testing.T) {
	tests := []struct {
		name    string
		dialect string
		channel string
		qty     int
	}{
		// Switchback sees the difference itself (doc 3 rule 4: the
		// supplier only SHOULD check).
		{"other quantity", bookingsystem.DialectV2, catalogtest.ChannelA, 3},
		{"other quantity", bookingsystem.DialectOCTO, catalogtest.ChannelA, 3},
		// Only the booking system sees it: its 400 surfaces as
		// BAD_REQUEST. (OCTO bookings name no channel.)
		{"other channel", bookingsystem.DialectV2, catalogtest.ChannelB, 2},
	}
	for _, tt := range tests {
		t.Run(tt.dialect+"/"+tt.name, func(t *testing.T) {
			e := startDialect(t, tt.dialect)
			h := schemas.Hold{ID: "hold-1", Items: []schemas.HoldItem{item("S1-P2", 1, e.freeSlot(), 2)}}
			if _, err := e.router.CreateHoldFor(ctx, sid, catalogtest.ChannelA, h, "req"); err != nil {
				t.Fatal(err)
			}
			other := h
			other.Items = []schemas.HoldItem{item("S1-P2", 1, e.freeSlot(), tt.qty)}
			_, err := e.router.CreateHoldFor(ctx, sid, tt.channel, other, "req")
			if codeOf(err) != "BAD_REQUEST" || !strings.Contains(err.Error(), "different data") {
				t.Fatalf("err = %v (code %q), want BAD_REQUEST", err, codeOf(err))
			}
			if n, st := e.sim.Bookings(), e.sim.BookingStatus(BookingUUID(h.ID, 0)); n != 1 || st != bookingsystem.OnHold {
				t.Fatalf("simulator: %d bookings, first %s; want 1 ON_HOLD", n, st)
			}
		})
	}
}

func TestCreateHold_AllOrNothingWhenAnItemFails(t *testing.T) {
	// The createBooking of the hold's second item (option O2 of S1-P2),
	// either dialect, whenever it is sent.
	secondCreate := bookingsim.Fault{Method: http.MethodPost, PathSuffix: "/bookings", BodyContains: `"S1-P2-O2"`, Times: 1}
	lost := secondCreate
	lost.Lost = true
	tests := []struct {
		name       string
		second     func(e *env, t *testing.T) schemas.HoldItem
		fault      *bookingsim.Fault
		wantCode   string
		wantSecond string // the second booking at the simulator afterwards ("" none)
	}{
		{"second item rejected: more units than vacancies", func(e *env, t *testing.T) schemas.HoldItem {
			// v+1 units must stay within OCTO's maxUnits (9): rejected
			// for want of room, not refused for too many units.
			slot, v := e.slotWithVacancies(t, "S1-P1", "S1-P1-O1", 1, 8)
			return item("S1-P1", 1, slot, v+1)
		}, nil, "CONFLICT", bookingsystem.Rejected},
		{"second item refused: unknown availability", func(e *env, _ *testing.T) schemas.HoldItem {
			return item("S1-P2", 2, "no-such-availability", 1)
		}, nil, "BAD_REQUEST", ""},
		{"second createBooking fails", func(e *env, _ *testing.T) schemas.HoldItem {
			return item("S1-P2", 2, e.freeSlot(), 1)
		}, &secondCreate, "UNAVAILABLE", ""},
		// The booking system made it: the compensation releases it too.
		{"second createBooking made but its answer lost", func(e *env, _ *testing.T) schemas.HoldItem {
			return item("S1-P2", 2, e.freeSlot(), 1)
		}, &lost, "UNAVAILABLE", bookingsystem.Expired},
	}
	for _, dialect := range dialects {
		for _, tt := range tests {
			t.Run(dialect+"/"+tt.name, func(t *testing.T) {
				e := startDialect(t, dialect)
				h := schemas.Hold{ID: "hold-aon", Items: []schemas.HoldItem{item("S1-P2", 1, e.freeSlot(), 2), tt.second(e, t)}}
				if tt.fault != nil {
					e.sim.InjectFault(*tt.fault)
				}
				_, err := e.router.CreateHoldFor(ctx, sid, catalogtest.ChannelA, h, "req")
				if codeOf(err) != tt.wantCode {
					t.Fatalf("err = %v (code %q), want %s", err, codeOf(err), tt.wantCode)
				}
				// The items are created concurrently: the first may not
				// have been sent when the second failed.
				if st := e.simStatuses(h.ID, 2); (st[0] != bookingsystem.Expired && st[0] != "") || st[1] != tt.wantSecond {
					t.Fatalf("simulator statuses %q, want EXPIRED (or never made) and %q (no partial hold left)", st, tt.wantSecond)
				}
				if dialect == bookingsystem.DialectV2 {
					o, err := e.bsc.GetOrder(ctx, e.conn, sid, OrderID(h.ID))
					if (err != nil || o.Status != bookingsystem.Expired) && !errors.Is(err, bookingsystem.ErrNotFound) {
						t.Fatalf("order %+v err %v, want EXPIRED (or never made)", o, err)
					}
				}
				if got := counter(e.router.metrics.compensations.WithLabelValues("partial_hold", "ok")); got != 1 {
					t.Fatalf("compensations = %v, want 1", got)
				}
			})
		}
	}
}

// orderWithHolds makes the bookings a hold of items would have made, each
// with its own holdExpirationMinutes: a booking system MAY give a booking
// another utcHoldExpiration than asked (doc 3). In one order for a v2
// booking system, standing alone for an OCTO one.
func (e *env) orderWithHolds(t *testing.T, h schemas.Hold, minutes []int) {
	t.Helper()
	orderID := OrderID(h.ID)
	if e.conn.Dialect == bookingsystem.DialectOCTO {
		orderID = ""
	}
	for i, it := range h.Items {
		units := make([]bookingsystem.UnitItem, it.Quantity)
		for k := range units {
			units[k] = bookingsystem.UnitItem{UnitID: "adult"}
		}
		_, err := e.bsc.CreateBooking(ctx, e.conn, bookingsystem.BookingRequest{SupplierID: sid, UUID: BookingUUID(h.ID, i), ChannelName: "Channel A",
			ChannelID: ChannelUUID(catalogtest.ChannelA), ProductID: it.ProductID, OptionID: it.RateID,
			AvailabilityID: bookingsystem.SystemAvailabilityID(it.AvailabilityID), UnitItems: units, HoldExpirationMinutes: minutes[i], OrderID: orderID})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestCreateBooking_ConfirmFailsWholeWhenOneBookingsHoldLapsed(t *testing.T) {
	tests := []struct {
		name       string
		wait       time.Duration
		wantCode   string
		wantStatus string // of every booking at the simulator
	}{
		{"every hold current: all confirmed", 0, "", bookingsystem.Confirmed},
		// v2: confirmOrder fails, the order REJECTED. OCTO: the lapsed
		// booking is seen first; the hold can never be confirmed and is
		// released whole.
		{"second booking's hold lapsed: nothing confirmed, nothing held", 2 * time.Minute, "CONFLICT", bookingsystem.Expired},
	}
	for _, dialect := range dialects {
		for _, tt := range tests {
			t.Run(dialect+"/"+tt.name, func(t *testing.T) {
				e := startDialect(t, dialect)
				h := schemas.Hold{ID: "hold-lapse", Items: []schemas.HoldItem{item("S1-P2", 1, e.freeSlot(), 1), item("S1-P2", 2, e.freeSlot(), 2)}}
				e.orderWithHolds(t, h, []int{15, 1})
				e.clock.add(tt.wait)
				got, accepted, err := e.router.CreateBooking(ctx, sid, bookingFor("bk-1", h), "req")
				if codeOf(err) != tt.wantCode {
					t.Fatalf("err = %v (code %q), want %q", err, codeOf(err), tt.wantCode)
				}
				if st := e.simStatuses(h.ID, 2); !all(st, tt.wantStatus) {
					t.Fatalf("simulator statuses %v, want all %s", st, tt.wantStatus)
				}
				if tt.wantCode != "" {
					if dialect == bookingsystem.DialectV2 {
						o, _ := e.bsc.GetOrder(ctx, e.conn, sid, OrderID(h.ID))
						if o.Status != bookingsystem.Rejected || !strings.Contains(err.Error(), "nothing was confirmed") {
							t.Fatalf("order %s, err %v; want REJECTED and a clear message", o.Status, err)
						}
					}
					return
				}
				if accepted || got.Status != schemas.BookingOpen || len(got.Tickets) != wantTickets(dialect, h.Items) || got.Cancelable == nil || !*got.Cancelable {
					t.Fatalf("booking %+v accepted %v", got, accepted)
				}
			})
		}
	}
}

func TestCreateBooking_MustBookTheWholeHold(t *testing.T) {
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			e := startDialect(t, dialect)
			h := schemas.Hold{ID: "hold-part", Items: []schemas.HoldItem{item("S1-P2", 1, e.freeSlot(), 2)}}
			if _, err := e.router.CreateHoldFor(ctx, sid, catalogtest.ChannelA, h, "req"); err != nil {
				t.Fatal(err)
			}
			b := bookingFor("bk-part", h)
			b.Items[0].Quantity = 1
			_, _, err := e.router.CreateBooking(ctx, sid, b, "req")
			if codeOf(err) != "INVALID_FIELD" {
				t.Fatalf("err = %v, want INVALID_FIELD", err)
			}
			if st := e.sim.BookingStatus(BookingUUID(h.ID, 0)); st != bookingsystem.OnHold {
				t.Fatalf("booking is %s, want still ON_HOLD (nothing confirmed)", st)
			}
		})
	}
}

func TestRouter_RefusesAnswersOutsideDocThree(t *testing.T) {
	setStatus := func(path, method string, order string, bookings ...string) rewriter {
		return func(r *http.Request, body any) any {
			m, ok := body.(map[string]any)
			if !ok || r.Method != method || !strings.HasSuffix(r.URL.Path, path) {
				return body
			}
			if order != "" {
				m["status"] = order
			}
			bks, _ := m["bookings"].([]any)
			for i, s := range bookings {
				if i < len(bks) && s != "" {
					bk := bks[i].(map[string]any)
					bk["status"] = s
					if s == bookingsystem.OnHold && bk["utcHoldExpiration"] == nil {
						bk["utcHoldExpiration"] = time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
					}
				}
			}
			return m
		}
	}
	const holdID = "hold-bad"
	release := func(e *env, h schemas.Hold) error { return e.router.ReleaseHold(ctx, sid, h.ID, "req") }
	read := func(e *env, h schemas.Hold) error { _, err := e.router.GetHold(ctx, sid, h.ID, "req"); return err }
	tests := []struct {
		name     string
		dialect  string
		spoil    rewriter
		call     func(e *env, h schemas.Hold) error
		wantRule string
	}{
		{"confirm leaves a booking on hold", bookingsystem.DialectV2, setStatus("/confirm", http.MethodPost, "", "", bookingsystem.OnHold),
			func(e *env, h schemas.Hold) error {
				_, _, err := e.router.CreateBooking(ctx, sid, bookingFor("bk", h), "req")
				return err
			}, RuleDisagree},
		{"release answers a held order CANCELLED", bookingsystem.DialectV2, setStatus("", http.MethodDelete, bookingsystem.Cancelled, bookingsystem.Cancelled, bookingsystem.Cancelled),
			release, RuleTransition},
		{"an order confirmed behind our back answers a hold read", bookingsystem.DialectV2, setStatus("", http.MethodGet, bookingsystem.Confirmed, bookingsystem.OnHold, bookingsystem.OnHold),
			read, RuleDisagree},
		// OCTO: the same tables over the hold's bookings seen as one order.
		// A release answered CANCELLED of a booking never confirmed is
		// EXPIRED in doc 3's words (the client maps OCTO's answer); one
		// that says it was confirmed is a move doc 3 does not have.
		{"release answers held bookings CANCELLED after a confirmation", bookingsystem.DialectOCTO, func(r *http.Request, body any) any {
			body = setStatus("/cancel", http.MethodPost, bookingsystem.Cancelled)(r, body)
			if m, ok := body.(map[string]any); ok && strings.HasSuffix(r.URL.Path, "/cancel") {
				m["utcConfirmedAt"] = time.Now().UTC().Format(time.RFC3339)
			}
			return body
		}, release, RuleTransition},
		{"a booking confirmed behind our back answers a hold read", bookingsystem.DialectOCTO, setStatus(BookingUUID(holdID, 0), http.MethodGet, bookingsystem.Confirmed),
			read, RuleDisagree},
	}
	for _, tt := range tests {
		t.Run(tt.dialect+"/"+tt.name, func(t *testing.T) {
			e := startDialect(t, tt.dialect)
			h := schemas.Hold{ID: holdID, Items: []schemas.HoldItem{item("S1-P2", 1, e.freeSlot(), 1), item("S1-P2", 2, e.freeSlot(), 1)}}
			if _, err := e.router.CreateHoldFor(ctx, sid, catalogtest.ChannelA, h, "req"); err != nil {
				t.Fatal(err)
			}
			e.setRewrite(tt.spoil)
			err := tt.call(e, h)
			if !errors.Is(err, ErrRefused) || codeOf(err) != "UNAVAILABLE" {
				t.Fatalf("err = %v, want ErrRefused (UNAVAILABLE)", err)
			}
			if got := counter(e.router.metrics.refused.WithLabelValues(tt.wantRule)); got != 1 {
				t.Fatalf("refused{%s} = %v, want 1", tt.wantRule, got)
			}
			if !strings.Contains(e.Logs.String(), "refused a booking-system answer") || strings.Contains(e.Logs.String(), simKey) {
				t.Fatal("the refusal is not logged, or the log shows the key")
			}
		})
	}
}

func TestRouter_PartnerSuppliersStillGoToThePartner(t *testing.T) {
	e := start(t)
	psim := partnersim.New(partnersim.Config{APIKey: "pk", APISecret: "ps"})
	ps := httptest.NewServer(psim)
	t.Cleanup(ps.Close)
	body := strings.Replace(catalogtest.SupplierBody("sup-p", "Partner Tours", "PT", "pk", "ps"), "https://partner.example.com/api/", ps.URL, 1)
	e.As(t, e.Operator).CreateSupplier(body)
	at := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 2).Add(9 * time.Hour)
	h := schemas.Hold{ID: "hold-p", Items: []schemas.HoldItem{{SupplierID: "sup-p", ProductID: "prod-1", RateID: "prod-1-r1", Quantity: 1, At: at}}}
	got, err := e.router.CreateHoldFor(ctx, "sup-p", catalogtest.ChannelA, h, "req")
	if err != nil || got.ID == "" {
		t.Fatalf("hold %+v err %v", got, err)
	}
	read, err := e.router.GetHold(ctx, "sup-p", got.ID, "req")
	if err != nil || read.ID != got.ID {
		t.Fatalf("partner hold %+v err %v", read, err)
	}
	if e.sim.Calls() != 0 {
		t.Fatalf("the booking system was called %d times for a partner supplier", e.sim.Calls())
	}
	if _, err := e.router.GetBooking(ctx, sid, "any", "req"); !errors.Is(err, ErrNeedsRecord) {
		t.Fatalf("GetBooking of a booking-system supplier by id: %v, want ErrNeedsRecord", err)
	}
}

func TestChooseUnit(t *testing.T) {
	units := []bookingsystem.Unit{{ID: "adult", Type: "ADULT"}, {ID: "child", Type: "CHILD"}}
	rate := catalog.Rate{RateData: catalog.RateData{Prices: []catalog.Price{{ID: "p-kid", TravelerType: &catalog.PriceTravelerType{AgeBand: "CHILD"}}}}}
	tests := []struct {
		name string
		it   schemas.HoldItem
		want string
	}{
		{"price named after a unit", schemas.HoldItem{PriceID: "child"}, "child"},
		{"age band of the item's price in the rate", schemas.HoldItem{PriceID: "p-kid"}, "child"},
		{"age band of the item's traveler type", schemas.HoldItem{PriceID: "p-x", TravelerType: []byte(`{"ageBand":"child"}`)}, "child"},
		{"nothing known: the option's first unit", schemas.HoldItem{PriceID: "p-x"}, "adult"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := chooseUnit(units, rate, tt.it); got != tt.want {
				t.Fatalf("unit %s, want %s", got, tt.want)
			}
		})
	}
}

func TestDerivedIDs_StableAndDistinct(t *testing.T) {
	ids := []string{OrderID("h"), BookingUUID("h", 0), BookingUUID("h", 1), OrderID("h2"), BookingUUID("h2", 0), ChannelUUID("chan-a")}
	again := []string{OrderID("h"), BookingUUID("h", 0), BookingUUID("h", 1), OrderID("h2"), BookingUUID("h2", 0), ChannelUUID("chan-a")}
	if !slices.Equal(ids, again) {
		t.Fatal("derived ids are not stable")
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] || len(id) != 36 {
			t.Fatalf("id %q repeated or not a UUID", id)
		}
		seen[id] = true
	}
	if u := "0b0e8c59-4a36-4f3e-9d7b-2f1b1e0c6a11"; ChannelUUID(u) != u {
		t.Fatal("a channel id that is a UUID is not kept")
	}
}

// holdOfThree holds one unit of three free options of the simulator.
func (e *env) holdOfThree(t *testing.T, id string) schemas.Hold {
	t.Helper()
	h := schemas.Hold{ID: id, Items: []schemas.HoldItem{item("S1-P2", 1, e.freeSlot(), 1), item("S1-P2", 2, e.freeSlot(), 1),
		item("S1-P4", 1, e.freeSlot(), 1)}}
	if _, err := e.router.CreateHoldFor(ctx, sid, catalogtest.ChannelA, h, "req"); err != nil {
		t.Fatal(err)
	}
	return h
}

// An OCTO hold is confirmed booking by booking: a failure half way cancels
// what was confirmed and releases the rest (doc 3: the order fails whole).
func TestCreateBooking_OCTOConfirmationFailingHalfWayLeavesNothingHeldOrSold(t *testing.T) {
	secondConfirm := bookingsim.Fault{Method: http.MethodPost, PathSuffix: "/confirm", Skip: 1, Times: 1}
	tests := []struct {
		name     string
		status   int
		lost     bool
		wantCode string
		want     []string // the three bookings at the simulator afterwards
	}{
		{"second confirmation refused", http.StatusBadRequest, false, "CONFLICT", []string{bookingsystem.Cancelled, bookingsystem.Expired, bookingsystem.Expired}},
		{"second confirmation fails", http.StatusServiceUnavailable, false, "UNAVAILABLE", []string{bookingsystem.Cancelled, bookingsystem.Expired, bookingsystem.Expired}},
		// One made but its answer lost is read again and is no failure:
		// TestCreateBooking_ConfirmWithoutAnAnswerIsReadAgain.
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startDialect(t, bookingsystem.DialectOCTO)
			h := e.holdOfThree(t, "hold-half")
			f := secondConfirm
			f.Status, f.Lost = tt.status, tt.lost
			e.sim.InjectFault(f)
			_, _, err := e.router.CreateBooking(ctx, sid, bookingFor("bk-half", h), "req")
			if codeOf(err) != tt.wantCode {
				t.Fatalf("err = %v (code %q), want %s", err, codeOf(err), tt.wantCode)
			}
			if st := e.simStatuses(h.ID, 3); !slices.Equal(st, tt.want) {
				t.Fatalf("simulator statuses %v, want %v", st, tt.want)
			}
			if got := counter(e.router.metrics.compensations.WithLabelValues("failed_confirm", "ok")); got != 1 {
				t.Fatalf("compensations{failed_confirm, ok} = %v, want 1", got)
			}
			// The hold is over: read EXPIRED, and a retry of the booking
			// confirms nothing.
			if got, err := e.router.GetHold(ctx, sid, h.ID, "req"); err != nil || got.Status != schemas.HoldExpired {
				t.Fatalf("hold %+v err %v, want EXPIRED", got, err)
			}
			if _, _, err := e.router.CreateBooking(ctx, sid, bookingFor("bk-half", h), "req"); codeOf(err) != "CONFLICT" {
				t.Fatalf("retry: %v, want CONFLICT", err)
			}
			if st := e.simStatuses(h.ID, 3); !slices.Equal(st, tt.want) {
				t.Fatalf("after the retry: %v, want %v", st, tt.want)
			}
		})
	}
}

// Releasing or cancelling an OCTO hold moves its bookings one by one: a
// failure half way fails the call, and the retry finishes the job.
func TestCancel_OCTOFailingHalfWayIsFinishedByTheRetry(t *testing.T) {
	tests := []struct {
		name  string
		book  bool // book the hold and cancel the booking; else release the hold
		first []string
		want  string
	}{
		{"release hold", false, []string{bookingsystem.Expired, bookingsystem.OnHold, bookingsystem.Expired}, bookingsystem.Expired},
		{"cancel booking", true, []string{bookingsystem.Cancelled, bookingsystem.Confirmed, bookingsystem.Cancelled}, bookingsystem.Cancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startDialect(t, bookingsystem.DialectOCTO)
			h := e.holdOfThree(t, "hold-cancel")
			op := func() error { return e.router.ReleaseHold(ctx, sid, h.ID, "req") }
			if tt.book {
				b, _, err := e.router.CreateBooking(ctx, sid, bookingFor("bk-cancel", h), "req")
				if err != nil || b.Status != schemas.BookingOpen {
					t.Fatalf("booking %+v err %v", b, err)
				}
				op = func() error { return e.router.CancelBookingOf(ctx, sid, b, "req") }
			}
			// The second booking's cancellation (they run concurrently).
			e.sim.InjectFault(bookingsim.Fault{Method: http.MethodPost, PathSuffix: BookingUUID(h.ID, 1) + "/cancel", Times: 1, Status: http.StatusServiceUnavailable})
			if err := op(); codeOf(err) != "UNAVAILABLE" {
				t.Fatalf("first call: %v, want UNAVAILABLE", err)
			}
			if st := e.simStatuses(h.ID, 3); !slices.Equal(st, tt.first) {
				t.Fatalf("after the failure: %v, want %v (the others were still moved)", st, tt.first)
			}
			if err := op(); err != nil {
				t.Fatalf("retry: %v", err)
			}
			if st := e.simStatuses(h.ID, 3); !all(st, tt.want) {
				t.Fatalf("after the retry: %v, want all %s", st, tt.want)
			}
		})
	}
}

// An OCTO supplier's OPENING_HOURS day with a lunch break is two
// availabilities in the catalog (bookingsystem splits it, doc 3 rule 2);
// a hold of a range is booked as the OCTO day, and the hold's retry and
// its booking still recognise it as that range.
func TestHoldAndBook_OCTOOpeningRangeOfADay(t *testing.T) {
	e := startWith(t, bookingsystem.DialectOCTO, func(c *bookingsim.Config) { c.OCTOOpeningHoursByDay = true })
	from := e.clock.now().AddDate(0, 0, 1)
	avs, ps, err := e.bsc.Availability(ctx, e.conn, bookingsystem.AvailabilityRequest{ProductID: "S1-P2", OptionID: "S1-P2-O1",
		LocalDateStart: from.Format(time.DateOnly), LocalDateEnd: from.AddDate(0, 0, 1).Format(time.DateOnly), AvailabilityType: bookingsystem.OpeningHours})
	if err != nil || len(ps) != 0 || len(avs) != 2 || avs[0].ID == avs[1].ID {
		t.Fatalf("availabilities %+v problems %v err %v, want the day's two ranges", avs, ps, err)
	}
	afternoon := legacyAvailabilityID(avs[1].ID)
	h := schemas.Hold{ID: "hold-range", Items: []schemas.HoldItem{item("S1-P2", 1, afternoon, 2)}}
	for attempt := range 2 {
		if got, err := e.router.CreateHoldFor(ctx, sid, catalogtest.ChannelA, h, "req"); err != nil || got.Status != schemas.HoldActive {
			t.Fatalf("hold attempt %d: %+v %v", attempt, got, err)
		}
	}
	b, accepted, err := e.router.CreateBooking(ctx, sid, bookingFor("bk-range", h), "req")
	if err != nil || accepted || b.Status != schemas.BookingOpen || len(b.Tickets) != wantTickets(bookingsystem.DialectOCTO, h.Items) {
		t.Fatalf("booking %+v accepted %v err %v", b, accepted, err)
	}
	if st := e.sim.BookingStatus(BookingUUID(h.ID, 0)); st != bookingsystem.Confirmed || e.sim.Bookings() != 1 {
		t.Fatalf("simulator: %s, %d bookings; want one CONFIRMED", st, e.sim.Bookings())
	}
}

// A retried booking whose hold is already confirmed is answered from the
// order as it is: confirm is not sent again (doc 3 lists no CONFIRMED →
// CONFIRMED move, and the simulator, like a real system may, refuses a
// second one).
func TestCreateBooking_RetryOfAConfirmedHoldSendsNoSecondConfirm(t *testing.T) {
	tests := []struct {
		name         string
		items        func(e *env, t *testing.T) []schemas.HoldItem
		wantStatus   string
		wantAccepted bool
	}{
		{"confirmed", func(e *env, _ *testing.T) []schemas.HoldItem {
			return []schemas.HoldItem{item("S1-P2", 1, e.freeSlot(), 1), item("S1-P4", 2, e.freeSlot(), 2)}
		}, schemas.BookingOpen, false},
		{"pending the supplier's decision", func(e *env, t *testing.T) []schemas.HoldItem {
			slot, _ := e.slotWithRoom(t, "S1-P3", "S1-P3-O1", 1)
			return []schemas.HoldItem{item("S1-P3", 1, slot, 1)}
		}, schemas.BookingPending, true},
	}
	for _, dialect := range dialects {
		for _, tt := range tests {
			t.Run(dialect+"/"+tt.name, func(t *testing.T) {
				e := startWith(t, dialect, func(c *bookingsim.Config) { c.RejectRepeatedConfirm = true })
				h := schemas.Hold{ID: "hold-again", Items: tt.items(e, t)}
				if _, err := e.router.CreateHoldFor(ctx, sid, catalogtest.ChannelA, h, "req"); err != nil {
					t.Fatal(err)
				}
				first, _, err := e.router.CreateBooking(ctx, sid, bookingFor("bk-again", h), "req")
				if err != nil || first.Status != tt.wantStatus {
					t.Fatalf("first: %+v %v", first, err)
				}
				again, accepted, err := e.router.CreateBooking(ctx, sid, bookingFor("bk-again", h), "req")
				if err != nil || again.Status != tt.wantStatus || accepted != tt.wantAccepted || len(again.Tickets) != len(first.Tickets) {
					t.Fatalf("retry: %+v accepted %v err %v; want the booking as first answered", again, accepted, err)
				}
			})
		}
	}
}

// A confirmation that fails without a rejection (5xx, timeout, an answer
// lost) may have happened at the supplier: the order (the OCTO hold's
// booking) is read again. Confirmed is a sale to record; still held is
// the failure; rejected is CONFLICT, nothing confirmed.
func TestCreateBooking_ConfirmWithoutAnAnswerIsReadAgain(t *testing.T) {
	confirm := bookingsim.Fault{Method: http.MethodPost, PathSuffix: "/confirm", Times: 1}
	tests := []struct {
		name     string
		dialect  string
		fault    bookingsim.Fault // Skip, Status, Lost
		lapse    bool             // the second booking's hold has passed
		wantCode string
		want     []string // the bookings at the simulator afterwards
	}{
		{"v2: confirmed, answer lost (500)", bookingsystem.DialectV2, bookingsim.Fault{Status: 500, Lost: true}, false, "", []string{bookingsystem.Confirmed, bookingsystem.Confirmed}},
		{"v2: confirmed, answer lost (503)", bookingsystem.DialectV2, bookingsim.Fault{Status: 503, Lost: true}, false, "", []string{bookingsystem.Confirmed, bookingsystem.Confirmed}},
		{"v2: not confirmed (503): the order stays held", bookingsystem.DialectV2, bookingsim.Fault{Status: 503}, false, "UNAVAILABLE", []string{bookingsystem.OnHold, bookingsystem.OnHold}},
		{"v2: rejected, answer lost: CONFLICT", bookingsystem.DialectV2, bookingsim.Fault{Status: 500, Lost: true}, true, "CONFLICT", []string{bookingsystem.Expired, bookingsystem.Expired}},
		{"OCTO: first confirmed, answer lost", bookingsystem.DialectOCTO, bookingsim.Fault{Status: 500, Lost: true}, false, "", []string{bookingsystem.Confirmed, bookingsystem.Confirmed}},
		{"OCTO: second confirmed, answer lost", bookingsystem.DialectOCTO, bookingsim.Fault{Skip: 1, Status: 502, Lost: true}, false, "", []string{bookingsystem.Confirmed, bookingsystem.Confirmed}},
		{"OCTO: second not confirmed (503): all or nothing", bookingsystem.DialectOCTO, bookingsim.Fault{Skip: 1, Status: 503}, false, "UNAVAILABLE", []string{bookingsystem.Cancelled, bookingsystem.Expired}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startDialect(t, tt.dialect)
			h := schemas.Hold{ID: "hold-lost", Items: []schemas.HoldItem{item("S1-P2", 1, e.freeSlot(), 1), item("S1-P2", 2, e.freeSlot(), 2)}}
			minutes := []int{15, 15}
			if tt.lapse {
				minutes[1] = 1
			}
			e.orderWithHolds(t, h, minutes)
			if tt.lapse {
				e.clock.add(2 * time.Minute)
			}
			f := confirm
			f.Skip, f.Status, f.Lost = tt.fault.Skip, tt.fault.Status, tt.fault.Lost
			e.sim.InjectFault(f)
			got, accepted, err := e.router.CreateBooking(ctx, sid, bookingFor("bk-lost", h), "req")
			if codeOf(err) != tt.wantCode {
				t.Fatalf("err = %v (code %q), want %q", err, codeOf(err), tt.wantCode)
			}
			if st := e.simStatuses(h.ID, 2); !slices.Equal(st, tt.want) {
				t.Fatalf("simulator statuses %v, want %v", st, tt.want)
			}
			if tt.wantCode == "" && (accepted || got.Status != schemas.BookingOpen || len(got.Tickets) != wantTickets(tt.dialect, h.Items)) {
				t.Fatalf("booking %+v accepted %v, want OPEN with its tickets", got, accepted)
			}
		})
	}
}

// doc 3: "PENDING MAY appear only for products with instantConfirmation
// false". A booking system that answers PENDING for a product the catalog
// says confirms instantly is refused, never recorded as accepted.
func TestCreateBooking_PendingForAnInstantProductIsRefused(t *testing.T) {
	tests := []struct {
		name    string
		instant bool // the catalog product's instantConfirmation
	}{
		{"instantConfirmation false: accepted", false},
		{"instantConfirmation true: refused", true},
	}
	for _, dialect := range dialects {
		for _, tt := range tests {
			t.Run(dialect+"/"+tt.name, func(t *testing.T) {
				e := startDialect(t, dialect) // the simulator confirms S1-P3 PENDING
				e.setInstant(t, "S1-P3", tt.instant)
				slot, _ := e.slotWithRoom(t, "S1-P3", "S1-P3-O1", 1)
				h := schemas.Hold{ID: "hold-pending", Items: []schemas.HoldItem{item("S1-P3", 1, slot, 1)}}
				if _, err := e.router.CreateHoldFor(ctx, sid, catalogtest.ChannelA, h, "req"); err != nil {
					t.Fatal(err)
				}
				got, accepted, err := e.router.CreateBooking(ctx, sid, bookingFor("bk-pending", h), "req")
				if !tt.instant {
					if err != nil || !accepted || got.Status != schemas.BookingPending {
						t.Fatalf("booking %+v accepted %v err %v, want PENDING", got, accepted, err)
					}
					return
				}
				if !errors.Is(err, ErrRefused) || codeOf(err) != "UNAVAILABLE" || accepted {
					t.Fatalf("err = %v accepted %v, want ErrRefused (UNAVAILABLE)", err, accepted)
				}
				if n := counter(e.router.metrics.refused.WithLabelValues(RuleInstant)); n != 1 {
					t.Fatalf("refused{%s} = %v, want 1", RuleInstant, n)
				}
			})
		}
	}
}

// A hold or booking runs under internal/booking's write lock (30 s): it
// ends by its deadline (Options.OperationTimeout, well inside the lock),
// and what a failure at the deadline made is undone, so a retry that takes
// the lock afterwards never races it, and nothing stays held.
func TestOperations_EndByTheirDeadlineLeavingNothingHeld(t *testing.T) {
	const deadline = 300 * time.Millisecond
	slow := bookingsim.Fault{Method: http.MethodPost, Delay: time.Second, Times: 1} // made at once, answered late
	tests := []struct {
		name     string
		dialect  string
		book     bool   // the booking is slow; else the hold
		slowPath string // PathSuffix of the slow call
		slowBody string // BodyContains of the slow call
		wantCode string
		want     []string // the three bookings at the simulator afterwards
	}{
		// The second item's createBooking answers after the deadline:
		// every booking made (that one too) is released.
		{"hold", bookingsystem.DialectV2, false, "/bookings", `"S1-P2-O2"`, "UNAVAILABLE", []string{bookingsystem.Expired, bookingsystem.Expired, bookingsystem.Expired}},
		{"hold", bookingsystem.DialectOCTO, false, "/bookings", `"S1-P2-O2"`, "UNAVAILABLE", []string{bookingsystem.Expired, bookingsystem.Expired, bookingsystem.Expired}},
		// confirmOrder answers after the deadline: read again, it is the
		// sale it made.
		{"booking", bookingsystem.DialectV2, true, "/confirm", "", "", []string{bookingsystem.Confirmed, bookingsystem.Confirmed, bookingsystem.Confirmed}},
		// The second confirmation answers after the deadline: read again
		// it is made, but the deadline has passed for the third; the
		// confirmed ones are cancelled, the third released.
		{"booking", bookingsystem.DialectOCTO, true, "/confirm", "", "UNAVAILABLE", []string{bookingsystem.Cancelled, bookingsystem.Cancelled, bookingsystem.Expired}},
	}
	for _, tt := range tests {
		t.Run(tt.dialect+"/"+tt.name, func(t *testing.T) {
			e := startDialect(t, tt.dialect)
			e.routerWith(func(o *Options) { o.OperationTimeout = deadline })
			h := schemas.Hold{ID: "hold-slow", Items: []schemas.HoldItem{item("S1-P2", 1, e.freeSlot(), 1), item("S1-P2", 2, e.freeSlot(), 1),
				item("S1-P4", 1, e.freeSlot(), 1)}}
			f := slow
			f.PathSuffix, f.BodyContains = tt.slowPath, tt.slowBody
			if tt.dialect == bookingsystem.DialectOCTO && tt.book {
				f.PathSuffix = BookingUUID(h.ID, 1) + "/confirm"
			}
			var err error
			start := time.Now()
			if tt.book {
				if _, err := e.router.CreateHoldFor(ctx, sid, catalogtest.ChannelA, h, "req"); err != nil {
					t.Fatal(err)
				}
				e.sim.InjectFault(f)
				start = time.Now()
				_, _, err = e.router.CreateBooking(ctx, sid, bookingFor("bk-slow", h), "req")
			} else {
				e.sim.InjectFault(f)
				_, err = e.router.CreateHoldFor(ctx, sid, catalogtest.ChannelA, h, "req")
			}
			took := time.Since(start)
			if codeOf(err) != tt.wantCode {
				t.Fatalf("err = %v (code %q), want %q", err, codeOf(err), tt.wantCode)
			}
			if took > deadline+settleBudget {
				t.Fatalf("took %s, want the deadline %s (and settling) to end it", took, deadline)
			}
			if st := e.simStatuses(h.ID, 3); !slices.Equal(st, tt.want) {
				t.Fatalf("simulator statuses %v, want %v", st, tt.want)
			}
		})
	}
}

// settleBudget is what a test allows for settling a failure after the
// deadline (a read, a compensation) against the local simulator.
const settleBudget = 700 * time.Millisecond

// The bookings of a hold are created a few at a time (at most
// holdParallelism), not one after another.
func TestCreateHold_CreatesItsBookingsFewAtATime(t *testing.T) {
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			e := startWith(t, dialect, func(c *bookingsim.Config) { c.Latency = 40 * time.Millisecond })
			var items []schemas.HoldItem
			for _, p := range []string{"S1-P2", "S1-P4"} {
				for o := 1; o <= 2; o++ {
					items = append(items, item(p, o, e.freeSlot(), 1), item(p, o, e.freeSlot(), 2))
				}
			}
			h := schemas.Hold{ID: "hold-eight", Items: items}
			if _, err := e.router.CreateHoldFor(ctx, sid, catalogtest.ChannelA, h, "req"); err != nil {
				t.Fatal(err)
			}
			if st := e.simStatuses(h.ID, len(items)); !all(st, bookingsystem.OnHold) {
				t.Fatalf("simulator statuses %v, want all ON_HOLD", st)
			}
			if m := e.maxCreating.Load(); m < 2 || m > holdParallelism {
				t.Fatalf("at most %d createBooking calls at once, want 2..%d", m, holdParallelism)
			}
		})
	}
}

// A hold needs its options' units (doc 3: unitItems), which are the
// booking system's: they are read once (a v2 supplier's product list, up
// to 8 MiB; an OCTO supplier's product) and kept for UnitsTTL, not read at
// every hold. Units the booking system renamed meanwhile are read again
// once, when it refuses a createBooking, and the item is sent again.
func TestCreateHold_OptionUnitsAreCachedAndReadAgainOnARejection(t *testing.T) {
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			e := startDialect(t, dialect)
			hold := func(id string) {
				t.Helper()
				h := schemas.Hold{ID: id, Items: []schemas.HoldItem{item("S1-P2", 1, e.freeSlot(), 1)}}
				if _, err := e.router.CreateHoldFor(ctx, sid, catalogtest.ChannelA, h, "req"); err != nil {
					t.Fatalf("hold %s: %v", id, err)
				}
			}
			reads := func(want int64, when string) {
				t.Helper()
				if got := e.productReads.Load(); got != want {
					t.Fatalf("%s: %d product reads, want %d", when, got, want)
				}
			}
			hold("h-1")
			reads(1, "first hold")
			hold("h-2")
			reads(1, "second hold (cached)")

			e.sim.Update(func(c *bookingsim.Config) {
				c.Units = []bookingsim.Unit{{ID: "adult-2", Type: "ADULT"}, {ID: "child-2", Type: "CHILD"}}
			})
			e.clock.add(time.Minute)
			hold("h-3")
			reads(2, "a hold refused for its stale units")
			if b := e.holdBookings(t, "h-3", 1)[0]; b.UnitItems[0].UnitID != "adult-2" {
				t.Fatalf("booking units %+v, want the renamed adult-2", b.UnitItems)
			}

			e.clock.add(UnitsTTL)
			hold("h-4")
			reads(3, "a hold past the TTL")
		})
	}
}

// Concurrent holds of one supplier read its units once (singleflight).
func TestCreateHold_ConcurrentHoldsReadTheUnitsOnce(t *testing.T) {
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			e := startWith(t, dialect, func(c *bookingsim.Config) { c.Latency = 30 * time.Millisecond })
			var wg sync.WaitGroup
			errs := make([]error, 6)
			for i := range errs {
				wg.Go(func() {
					h := schemas.Hold{ID: fmt.Sprintf("h-c%d", i), Items: []schemas.HoldItem{item("S1-P2", 1, e.freeSlot(), 1)}}
					_, errs[i] = e.router.CreateHoldFor(ctx, sid, catalogtest.ChannelA, h, "req")
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("hold %d: %v", i, err)
				}
			}
			if n := e.productReads.Load(); n != 1 {
				t.Fatalf("%d product reads for 6 concurrent holds, want 1", n)
			}
		})
	}
}

// TestHoldAndBook_ByTheCatalogsAvailabilityID: a reseller holds by the id
// it read (the catalog's UUID of the availability, kept beside the
// booking system's own id, as a synchronization writes it); the
// createBooking names the booking system's id, and the booking of the hold
// is recognised. An id of an earlier version's form ("b64.") still works
// (the other tests use it).
func TestHoldAndBook_ByTheCatalogsAvailabilityID(t *testing.T) {
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			e := startDialect(t, dialect)
			from := e.clock.now().AddDate(0, 0, 1)
			avs, _, err := e.bsc.Availability(ctx, e.conn, bookingsystem.AvailabilityRequest{SupplierID: sid, ProductID: "S1-P2", OptionID: "S1-P2-O1",
				LocalDateStart: from.Format(time.DateOnly), LocalDateEnd: from.AddDate(0, 0, 1).Format(time.DateOnly), AvailabilityType: bookingsystem.OpeningHours})
			if err != nil || len(avs) == 0 {
				t.Fatalf("availabilities %v %v", avs, err)
			}
			up := avs[0]
			id := bookingsystem.CatalogAvailabilityID(sid, "S1-P2", "S1-P2-O1", up.ID)
			if _, err := e.Store.PutAvailabilities(ctx, catalog.SystemScope(), sid, "S1-P2", "S1-P2-O1", []catalog.Availability{{ID: id, SystemID: up.ID,
				Start: up.LocalDateTimeStart.UTC(), End: up.LocalDateTimeEnd.UTC(), Capacity: 100}}); err != nil {
				t.Fatal(err)
			}
			h := schemas.Hold{ID: "hold-by-id", Items: []schemas.HoldItem{item("S1-P2", 1, id, 2)}}
			if got, err := e.router.CreateHoldFor(ctx, sid, catalogtest.ChannelA, h, "req"); err != nil || got.Status != schemas.HoldActive {
				t.Fatalf("hold: %+v %v", got, err)
			}
			b, _, err := e.router.CreateBooking(ctx, sid, bookingFor("bk-by-id", h), "req")
			if err != nil || b.Status != schemas.BookingOpen {
				t.Fatalf("booking %+v %v", b, err)
			}
			if st := e.sim.BookingStatus(BookingUUID(h.ID, 0)); st != bookingsystem.Confirmed {
				t.Fatalf("simulator: %s, want CONFIRMED (the booking system's availability %s)", st, up.ID)
			}
		})
	}
}

// TestCreateBooking_TicketsCarryTheContract: the tickets of a booking at a
// booking system name the booking items they are for (bookingItemIds),
// copy the lead traveler, group guests by the traveler type of the rate's
// price of their unit, and carry a barcode: OCTO's QR code per unit
// (deliveryMethod TICKET, QRCODE read as QR_CODE), v2's supplier
// reference as TEXT (doc 3 shows no delivery value).
func TestCreateBooking_TicketsCarryTheContract(t *testing.T) {
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			e := startDialect(t, dialect)
			// The rate's prices are named after the units (as a
			// synchronization writes them: bookingsync.UnitPrices).
			e.As(t, e.Operator).PutRate(sid, "S1-P2", "S1-P2-O1",
				`{"id":"S1-P2-O1","name":"Option","prices":[{"id":"adult","name":"Adult","travelerType":{"ageBand":"ADULT","minAge":18,"name":"Adult"},"retail":{"amount":10,"currency":"EUR"}}]}`)
			h := schemas.Hold{ID: "hold-tickets", Items: []schemas.HoldItem{item("S1-P2", 1, e.freeSlot(), 2), item("S1-P4", 2, e.freeSlot(), 1)}}
			if _, err := e.router.CreateHoldFor(ctx, sid, catalogtest.ChannelA, h, "req"); err != nil {
				t.Fatal(err)
			}
			b := bookingFor("bk-tickets", h)
			b.Items[0].ID, b.Items[1].ID = "item-1", "item-2"
			b.Items[1].Traveler = &schemas.Traveler{FirstName: "Grace", LastName: "Hopper", IsLead: true}
			got, _, err := e.router.CreateBooking(ctx, sid, b, "req")
			if err != nil || len(got.Tickets) != wantTickets(dialect, h.Items) {
				t.Fatalf("booking %+v err %v", got, err)
			}
			format := "TEXT"
			if dialect == bookingsystem.DialectOCTO {
				format = "QR_CODE"
			}
			for i, tk := range got.Tickets {
				var bc schemas.Barcode
				if err := json.Unmarshal(tk.Barcode, &bc); err != nil || bc.Format != format || bc.Value == "" {
					t.Fatalf("ticket %d barcode %s, want %s", i, tk.Barcode, format)
				}
				if tk.Status != schemas.BookingOpen || tk.LeadTraveler == nil || len(tk.BookingItemIDs) != 1 || len(tk.Guests) != 1 {
					t.Fatalf("ticket %d: %+v", i, tk)
				}
				switch tk.BookingItemIDs[0] {
				case "item-1": // S1-P2-O1: the adult price's traveler type; the booking's lead traveler (of item-2)
					if g := tk.Guests[0]; g.TypeCode != "ADULT" || g.TypeName != "Adult" || tk.LeadTraveler.FirstName != "Grace" || !tk.LeadTraveler.IsLead {
						t.Fatalf("ticket %d of item-1: %+v guests %+v lead %+v", i, tk, tk.Guests, tk.LeadTraveler)
					}
				case "item-2": // no price of the unit: its id; the item's own lead traveler
					if g := tk.Guests[0]; g.TypeCode != "adult" || tk.LeadTraveler.FirstName != "Grace" {
						t.Fatalf("ticket %d of item-2: %+v guests %+v lead %+v", i, tk, tk.Guests, tk.LeadTraveler)
					}
				default:
					t.Fatalf("ticket %d names %v", i, tk.BookingItemIDs)
				}
			}
		})
	}
}

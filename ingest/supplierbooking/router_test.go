package supplierbooking

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/bench/partnersim"
	bs "github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/schemas"
)

func TestCreateHold_RetryWithTheSameIDIsTheSameBookings(t *testing.T) {
	e := start(t)
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
	if st := e.simStatuses(h.ID, 2); !all(st, bs.OnHold) {
		t.Fatalf("statuses %v", st)
	}
	o, err := e.bsc.GetOrder(ctx, e.conn, sid, OrderID(h.ID))
	if err != nil || o.Status != bs.OnHold || len(o.Bookings) != 2 {
		t.Fatalf("order %+v err %v", o, err)
	}
	for _, b := range o.Bookings {
		if len(b.UnitItems) == 0 || b.UnitItems[0].UnitID != "adult" || b.ChannelID != ChannelUUID(catalogtest.ChannelA) ||
			b.ResellerReference == nil || *b.ResellerReference != h.ID {
			t.Fatalf("booking %+v: want unit adult (the option's first), the channel's uuid and the hold id as reference", b)
		}
	}
}

func TestCreateHold_SameIDWithOtherDataIsBadRequestAndKeepsTheFirst(t *testing.T) {
	tests := []struct {
		name    string
		channel string
		qty     int
	}{
		// Switchback sees the difference itself (doc 3 rule 4: the
		// supplier only SHOULD check).
		{"other quantity", catalogtest.ChannelA, 3},
		// Only the booking system sees it: its 400 surfaces as BAD_REQUEST.
		{"other channel", catalogtest.ChannelB, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t)
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
			if n, st := e.sim.Bookings(), e.sim.BookingStatus(BookingUUID(h.ID, 0)); n != 1 || st != bs.OnHold {
				t.Fatalf("simulator: %d bookings, first %s; want 1 ON_HOLD", n, st)
			}
		})
	}
}

func TestCreateHold_AllOrNothingWhenAnItemFails(t *testing.T) {
	tests := []struct {
		name     string
		second   func(e *env, t *testing.T) schemas.HoldItem
		wantCode string
	}{
		{"second item rejected: more units than vacancies", func(e *env, t *testing.T) schemas.HoldItem {
			slot, v := e.slotWithRoom(t, "S1-P1", "S1-P1-O1", 1)
			return item("S1-P1", 1, slot, v+1)
		}, "CONFLICT"},
		{"second item refused: unknown availability", func(e *env, _ *testing.T) schemas.HoldItem {
			return item("S1-P2", 2, "no-such-availability", 1)
		}, "BAD_REQUEST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t)
			h := schemas.Hold{ID: "hold-aon", Items: []schemas.HoldItem{item("S1-P2", 1, e.freeSlot(), 2), tt.second(e, t)}}
			_, err := e.router.CreateHoldFor(ctx, sid, catalogtest.ChannelA, h, "req")
			if codeOf(err) != tt.wantCode {
				t.Fatalf("err = %v (code %q), want %s", err, codeOf(err), tt.wantCode)
			}
			if st := e.sim.BookingStatus(BookingUUID(h.ID, 0)); st != bs.Expired {
				t.Fatalf("first item is %s at the simulator, want EXPIRED (no partial hold left)", st)
			}
			o, err := e.bsc.GetOrder(ctx, e.conn, sid, OrderID(h.ID))
			if err != nil || o.Status != bs.Expired {
				t.Fatalf("order %+v err %v, want EXPIRED", o, err)
			}
			if got := counter(e.router.metrics.compensations.WithLabelValues("partial_hold", "ok")); got != 1 {
				t.Fatalf("compensations = %v, want 1", got)
			}
		})
	}
}

// orderWithHolds makes the order a hold of items would have made, each
// booking with its own holdExpirationMinutes: a booking system MAY give a
// booking another utcHoldExpiration than asked (doc 3).
func (e *env) orderWithHolds(t *testing.T, h schemas.Hold, minutes []int) {
	t.Helper()
	for i, it := range h.Items {
		units := make([]bs.UnitItem, it.Quantity)
		for k := range units {
			units[k] = bs.UnitItem{UnitID: "adult"}
		}
		_, err := e.bsc.CreateBooking(ctx, e.conn, bs.BookingRequest{SupplierID: sid, UUID: BookingUUID(h.ID, i), ChannelName: "Channel A",
			ChannelID: ChannelUUID(catalogtest.ChannelA), ProductID: it.ProductID, OptionID: it.RateID,
			AvailabilityID: bs.SystemAvailabilityID(it.AvailabilityID), UnitItems: units, HoldExpirationMinutes: minutes[i], OrderID: OrderID(h.ID)})
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
		{"every hold current: all confirmed", 0, "", bs.Confirmed},
		{"second booking's hold lapsed: order rejected, nothing confirmed", 2 * time.Minute, "CONFLICT", bs.Expired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t)
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
				o, _ := e.bsc.GetOrder(ctx, e.conn, sid, OrderID(h.ID))
				if o.Status != bs.Rejected || !strings.Contains(err.Error(), "nothing was confirmed") {
					t.Fatalf("order %s, err %v; want REJECTED and a clear message", o.Status, err)
				}
				return
			}
			if accepted || got.Status != schemas.BookingOpen || len(got.Tickets) != 2 || got.Cancelable == nil || !*got.Cancelable {
				t.Fatalf("booking %+v accepted %v", got, accepted)
			}
		})
	}
}

func TestCreateBooking_MustBookTheWholeHold(t *testing.T) {
	e := start(t)
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
	if st := e.sim.BookingStatus(BookingUUID(h.ID, 0)); st != bs.OnHold {
		t.Fatalf("booking is %s, want still ON_HOLD (nothing confirmed)", st)
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
					if s == bs.OnHold && bk["utcHoldExpiration"] == nil {
						bk["utcHoldExpiration"] = time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
					}
				}
			}
			return m
		}
	}
	tests := []struct {
		name     string
		spoil    rewriter
		call     func(e *env, h schemas.Hold) error
		wantRule string
	}{
		{"confirm leaves a booking on hold", setStatus("/confirm", http.MethodPost, "", "", bs.OnHold),
			func(e *env, h schemas.Hold) error {
				_, _, err := e.router.CreateBooking(ctx, sid, bookingFor("bk", h), "req")
				return err
			}, RuleDisagree},
		{"release answers a held order CANCELLED", setStatus("", http.MethodDelete, bs.Cancelled, bs.Cancelled, bs.Cancelled),
			func(e *env, h schemas.Hold) error { return e.router.ReleaseHold(ctx, sid, h.ID, "req") }, RuleTransition},
		{"an order confirmed behind our back answers a hold read", setStatus("", http.MethodGet, bs.Confirmed, bs.OnHold, bs.OnHold),
			func(e *env, h schemas.Hold) error { _, err := e.router.GetHold(ctx, sid, h.ID, "req"); return err }, RuleDisagree},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t)
			h := schemas.Hold{ID: "hold-bad", Items: []schemas.HoldItem{item("S1-P2", 1, e.freeSlot(), 1), item("S1-P2", 2, e.freeSlot(), 1)}}
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
	e.Must(t, 201, "POST", catalogtest.Ch+"/suppliers", e.Operator, body)
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
	units := []bs.Unit{{ID: "adult", Type: "ADULT"}, {ID: "child", Type: "CHILD"}}
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

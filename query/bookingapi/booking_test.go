package bookingapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/ingest/partner"
	"github.com/switchbackhq/switchback/internal/booking"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/platform/outbound"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/internal/simulators/partnersim"
	"github.com/switchbackhq/switchback/processors/bookingchange"
	"github.com/switchbackhq/switchback/query/bookingapi"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/query/querytest"
	"github.com/switchbackhq/switchback/schemas"
)

// allowLoopback is the outbound policy of these tests: their simulators
// listen on loopback over http, which the default policy refuses.
var allowLoopback = outbound.Policy{AllowHTTP: true, AllowPrivate: true}

const (
	sup, prod, rateA, rateB = "sup-bk", "prod-bk", "rate-a", "rate-b"
	holds, bookings         = querytest.V12 + "/holds", querytest.V12 + "/bookings"
)

// lazy lets the routes be registered before the service exists (the
// service needs the Redis and catalog that catalogtest.Start makes).
type lazy struct{ svc *booking.Service }

func (l *lazy) CreateHold(ctx context.Context, p principals.Principal, reqID string, in schemas.Hold) (schemas.Hold, error) {
	return l.svc.CreateHold(ctx, p, reqID, in)
}
func (l *lazy) Hold(ctx context.Context, p principals.Principal, reqID, id string) (schemas.Hold, error) {
	return l.svc.Hold(ctx, p, reqID, id)
}
func (l *lazy) ReleaseHold(ctx context.Context, p principals.Principal, reqID, id string) error {
	return l.svc.ReleaseHold(ctx, p, reqID, id)
}
func (l *lazy) CreateBooking(ctx context.Context, p principals.Principal, reqID string, in schemas.Booking) (booking.Result, error) {
	return l.svc.CreateBooking(ctx, p, reqID, in)
}
func (l *lazy) Booking(ctx context.Context, p principals.Principal, reqID, id string) (booking.Result, error) {
	return l.svc.Booking(ctx, p, reqID, id)
}
func (l *lazy) CancelBooking(ctx context.Context, p principals.Principal, reqID, id string) (booking.Result, error) {
	return l.svc.CancelBooking(ctx, p, reqID, id)
}

// rules is the registry's Rule read: one booking rule per subscriber.
type rules map[string]registry.Rule

func (r rules) Rule(_ context.Context, sub, typ string) (registry.Rule, error) {
	if rule, ok := r[sub]; ok && typ == schemas.TypeBooking {
		return rule, nil
	}
	return registry.Rule{}, registry.ErrNotFound
}

type env struct {
	*querytest.Env
	sim    *partnersim.Server
	svc    *booking.Service
	offset atomic.Int64 // added to the service's clock
}

// start runs the catalog API with the booking routes, a simulated partner
// for supplier sup, and product prod with rate-a bound to channel A and
// rate-b bound to channel B.
func start(t *testing.T, cfg partnersim.TxConfig) *env {
	t.Helper()
	e := &env{}
	l := &lazy{}
	e.Env = querytest.Start(t, querytest.Options{Routes: func(s *httpapi.Server) { bookingapi.Register(s, l) }})
	e.sim = partnersim.New(partnersim.Config{APIKey: "pk", APISecret: "ps", TxConfig: cfg})
	ps := httptest.NewServer(e.sim)
	t.Cleanup(ps.Close)
	e.svc = booking.New(booking.Options{
		Redis: e.Redis, Publisher: e.Rec, Catalog: e.Store, Logger: e.Logger, PollLease: 10 * time.Millisecond,
		Partner: partner.Suppliers{Client: partner.NewClient(partner.Options{Outbound: allowLoopback}), Catalog: e.Store},
		Clock:   func() time.Time { return time.Now().Add(time.Duration(e.offset.Load())) },
	})
	l.svc = e.svc
	base := querytest.Ch + "/suppliers/" + sup + "/products/" + prod
	for _, s := range []struct{ path, body string }{
		{querytest.Ch + "/suppliers", strings.Replace(catalogtest.SupplierBody(sup, "Booked Tours", "BK", "pk", "ps"), "https://partner.example.com/api/", ps.URL, 1)},
		{querytest.Ch + "/suppliers/" + sup + "/products", catalogtest.ProductBody(prod, "Canyon ride", "A ride")},
		{base + "/rates", catalogtest.RateBody(rateA, "Adult")},
		{base + "/rates", catalogtest.RateBody(rateB, "Child")},
		{base + "/channels/" + catalogtest.ChannelA, `{"priceAt":"PRICE_AT_SALE","rateIds":["rate-a"]}`},
		{base + "/channels/" + catalogtest.ChannelB, `{"priceAt":"PRICE_AT_SALE","rateIds":["rate-b"]}`},
	} {
		e.Must(t, 201, "POST", s.path, e.Operator, s.body)
	}
	return e
}

var start0 = time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 3).Add(9 * time.Hour)

func holdBody(id, rate string, qty int) string {
	idf := ""
	if id != "" {
		idf = fmt.Sprintf(`"id":%q,`, id)
	}
	return fmt.Sprintf(`{"hold":{%s"items":[{"supplierId":%q,"productId":%q,"rateId":%q,"quantity":%d,"at":%q}]}}`,
		idf, sup, prod, rate, qty, start0.Format(time.RFC3339))
}

func bookingBody(id, holdID, rate string, qty int, ref string) string {
	return fmt.Sprintf(`{"booking":{"id":%q,"holdId":%q,"resellerBookingRef":%q,"customer":{"email":"a@example.com","firstName":"Ada"},
"items":[{"supplierId":%q,"productId":%q,"rateId":%q,"quantity":%d,"startTime":%q}]}}`,
		id, holdID, ref, sup, prod, rate, qty, start0.Format(time.RFC3339))
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("body %s: %v", b, err)
	}
	return m
}

// hold creates a hold on channel A and returns its id.
func (e *env) hold(t *testing.T, id string, qty int) string {
	t.Helper()
	got := decode(t, e.Must(t, 201, "POST", holds, e.Reseller1, holdBody(id, rateA, qty)))
	h, _ := got["hold"].(map[string]any)
	if h["status"] != schemas.HoldActive || h["id"] == "" {
		t.Fatalf("hold = %v", got)
	}
	return h["id"].(string)
}

func TestHoldBeforeBooking_RefusedWithTheErrorObject(t *testing.T) {
	e := start(t, partnersim.TxConfig{})
	released := e.hold(t, "", 2)
	e.Must(t, 204, "DELETE", holds+"/"+released, e.Reseller1, "")
	got := decode(t, e.Must(t, 200, "GET", holds+"/"+released, e.Reseller1, ""))
	if got["hold"].(map[string]any)["status"] != schemas.HoldReleased {
		t.Fatalf("released hold = %v", got)
	}
	active := e.hold(t, "", 2)
	otherChannel := decode(t, e.Must(t, 201, "POST", holds, e.Reseller2, holdBody("", rateB, 2)))["hold"].(map[string]any)["id"].(string)
	used := e.hold(t, "", 1)
	e.Must(t, 201, "POST", bookings, e.Reseller1, bookingBody("bk-uses", used, rateA, 1, ""))

	tests := []struct {
		name   string
		body   string
		expire bool
		status int
		code   string
		field  string
	}{
		{"no holdId", strings.Replace(bookingBody("bk-1", "", rateA, 1, ""), `"holdId":"",`, "", 1), false, 400, "INVALID_FIELD", "booking.holdId"},
		{"unknown hold", bookingBody("bk-2", "no-such-hold", rateA, 1, ""), false, 400, "INVALID_FIELD", "booking.holdId"},
		{"another channel's hold", bookingBody("bk-3", otherChannel, rateA, 1, ""), false, 400, "INVALID_FIELD", "booking.holdId"},
		{"released hold", bookingBody("bk-4", released, rateA, 1, ""), false, 409, "CONFLICT", ""},
		{"hold used by another booking", bookingBody("bk-5", used, rateA, 1, ""), false, 409, "CONFLICT", ""},
		{"more than held", bookingBody("bk-6", active, rateA, 3, ""), false, 400, "INVALID_FIELD", "booking.items[0]"},
		{"another start time than held", strings.Replace(bookingBody("bk-7", active, rateA, 1, ""), start0.Format(time.RFC3339), start0.Add(time.Hour).Format(time.RFC3339), 1), false, 400, "INVALID_FIELD", "booking.items[0]"},
		{"expired hold", bookingBody("bk-8", active, rateA, 1, ""), true, 409, "CONFLICT", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.expire {
				e.offset.Store(int64(time.Hour))
				defer e.offset.Store(0)
			}
			before := e.sim.BookingsCreated()
			status, b := e.Do(t, "POST", bookings, e.Reseller1, tc.body)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, b)
			}
			got := decode(t, b)
			if got["code"] != tc.code || got["message"] == "" || got["meta"] == nil {
				t.Fatalf("error object = %s", b)
			}
			if tc.field != "" {
				if d, _ := got["data"].(map[string]any); d["field"] != tc.field {
					t.Fatalf("data.field = %v, want %s", got["data"], tc.field)
				}
			}
			if e.sim.BookingsCreated() != before {
				t.Fatal("the partner was asked to book")
			}
		})
	}
	// The hold covered only rate-a: rate-b (bound to channel B only) is not
	// even visible to channel A.
	status, b := e.Do(t, "POST", bookings, e.Reseller1, bookingBody("bk-9", active, rateB, 1, ""))
	if status != 400 || !strings.Contains(string(b), "INVALID_FIELD") {
		t.Fatalf("unbound rate: %d %s", status, b)
	}
	// And the active hold still books.
	e.Must(t, 201, "POST", bookings, e.Reseller1, bookingBody("bk-ok", active, rateA, 2, ""))
}

func TestCreateBooking_SameIDIsOneBooking(t *testing.T) {
	e := start(t, partnersim.TxConfig{})
	h := e.hold(t, "", 2)
	body := bookingBody("bk-idem", h, rateA, 2, "REF-1")
	var wg sync.WaitGroup
	statuses := make([]int, 4)
	bodies := make([][]byte, 4)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i], bodies[i] = e.Do(t, "POST", bookings, e.Reseller1, body)
		}()
	}
	wg.Wait()
	for i := range statuses {
		if statuses[i] != 201 {
			t.Fatalf("attempt %d: %d %s", i, statuses[i], bodies[i])
		}
		b := decode(t, bodies[i])["booking"].(map[string]any)
		if b["id"] != "bk-idem" || b["holdId"] != h || b["status"] != schemas.BookingOpen || len(b["tickets"].([]any)) != 1 {
			t.Fatalf("attempt %d: booking %v", i, b)
		}
	}
	if n := e.sim.BookingsCreated(); n != 1 {
		t.Fatalf("partner bookings = %d, want 1", n)
	}
	// A retry after the hold was released or expired is still the same
	// booking: the retry is answered from the record.
	e.offset.Store(int64(time.Hour))
	e.Must(t, 201, "POST", bookings, e.Reseller1, body)
	e.offset.Store(0)

	status, b := e.Do(t, "POST", bookings, e.Reseller1, bookingBody("bk-idem", h, rateA, 1, "REF-1"))
	if status != 400 || decode(t, b)["code"] != "BAD_REQUEST" {
		t.Fatalf("same id, other data: %d %s", status, b)
	}
	status, b = e.Do(t, "POST", bookings, e.Reseller2, bookingBody("bk-idem", h, rateB, 1, "REF-1"))
	if status == 201 || status == 200 {
		t.Fatalf("another channel reused the id: %d %s", status, b)
	}
	if n := e.sim.BookingsCreated(); n != 1 {
		t.Fatalf("partner bookings = %d, want 1", n)
	}
}

func TestHoldsAndBookings_OnlyTheirChannelSeesThem(t *testing.T) {
	e := start(t, partnersim.TxConfig{})
	h := e.hold(t, "hold-iso", 1)
	e.Must(t, 201, "POST", bookings, e.Reseller1, bookingBody("bk-iso", h, rateA, 1, ""))
	for _, c := range []struct {
		method, path string
	}{
		{"GET", holds + "/" + h}, {"DELETE", holds + "/" + h},
		{"GET", bookings + "/bk-iso"}, {"PUT", bookings + "/cancel/bk-iso"},
		{"GET", querytest.V13 + "/bookings/bk-iso"},
	} {
		status, b := e.Do(t, c.method, c.path, e.Reseller2, "")
		if status != 404 || decode(t, b)["code"] != "NOT_FOUND" {
			t.Errorf("%s %s by another channel: %d %s", c.method, c.path, status, b)
		}
	}
	// The other reseller of the same channel sees them.
	e.Must(t, 200, "GET", bookings+"/bk-iso", e.Reseller1b, "")
	e.Must(t, 200, "GET", holds+"/"+h, e.Reseller1b, "")
	if status, _ := e.Do(t, "GET", bookings+"/bk-iso", e.Operator, ""); status != 403 {
		t.Errorf("operator: %d, want 403", status)
	}
	// Ids are unique per channel (issue 18): another channel's hold and
	// booking of the same ids are theirs, made at the partner under other
	// ids, and learn nothing of the first.
	got := decode(t, e.Must(t, 201, "POST", holds, e.Reseller2, holdBody("hold-iso", rateB, 1)))
	if hold := got["hold"].(map[string]any); hold["id"] != "hold-iso" || hold["status"] != schemas.HoldActive {
		t.Errorf("the other channel's hold-iso: %v", got)
	}
	e.Must(t, 201, "POST", bookings, e.Reseller2, bookingBody("bk-iso", "hold-iso", rateB, 1, ""))
	if mine := decode(t, e.Must(t, 200, "GET", bookings+"/bk-iso", e.Reseller1, "")); mine["booking"].(map[string]any)["items"].([]any)[0].(map[string]any)["rateId"] != rateA {
		t.Errorf("channel A's bk-iso changed: %v", mine)
	}
	theirs := decode(t, e.Must(t, 200, "GET", bookings+"/bk-iso", e.Reseller2, ""))
	if theirs["booking"].(map[string]any)["items"].([]any)[0].(map[string]any)["rateId"] != rateB {
		t.Errorf("channel B's bk-iso: %v", theirs)
	}
	// Cancelling one leaves the other.
	e.Must(t, 204, "PUT", bookings+"/cancel/bk-iso", e.Reseller2, "")
	if mine := decode(t, e.Must(t, 200, "GET", bookings+"/bk-iso", e.Reseller1, "")); mine["booking"].(map[string]any)["status"] == schemas.BookingCancelled {
		t.Errorf("cancelling channel B's bk-iso cancelled channel A's: %v", mine)
	}
}

// process runs the booking processor over what the API published and
// returns the notifications it produced.
func (e *env) process(t *testing.T, rs rules) []schemas.Notification {
	t.Helper()
	out := &catalogtest.Recorder{}
	p := bookingchange.New(bookingchange.Options{Store: e.svc, Subscribers: subscribers{e.Principals}, Rules: rs, Publisher: out})
	for _, m := range e.Rec.Messages() {
		if m.Topic != schemas.TopicBookings && m.Topic != schemas.TopicHolds {
			continue
		}
		if err := p.Handle(context.Background(), stream.Message{Topic: m.Topic, Key: m.Key, Value: m.Value}); err != nil {
			t.Fatal(err)
		}
	}
	var notes []schemas.Notification
	for _, m := range out.Messages() {
		if m.Topic != schemas.TopicNotifications {
			continue
		}
		n, err := schemas.DecodeNotification(m.Value)
		if err != nil {
			t.Fatal(err)
		}
		notes = append(notes, n)
	}
	return notes
}

type subscribers struct{ ps *principals.Store }

func (s subscribers) OnChannel(_ context.Context, ch string) ([]string, error) {
	var out []string
	for _, p := range s.ps.List() {
		if p.Role == principals.RoleReseller && p.ChannelID == ch {
			out = append(out, p.ID)
		}
	}
	return out, nil
}

func payload(t *testing.T, n schemas.Notification) schemas.BookingPayload {
	t.Helper()
	var p schemas.BookingPayload
	if err := json.Unmarshal(n.Payload, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCancelBooking_ProducesTheCanceledNotification(t *testing.T) {
	e := start(t, partnersim.TxConfig{})
	h := e.hold(t, "", 1)
	e.Must(t, 201, "POST", bookings, e.Reseller1, bookingBody("bk-cancel", h, rateA, 1, "MY-REF-7"))
	if b := e.Must(t, 204, "PUT", bookings+"/cancel/bk-cancel", e.Reseller1, ""); len(b) != 0 {
		t.Fatalf("cancel answer has a body: %s", b)
	}
	got := decode(t, e.Must(t, 200, "GET", bookings+"/bk-cancel", e.Reseller1, ""))
	if got["booking"].(map[string]any)["status"] != schemas.BookingCancelled {
		t.Fatalf("cancelled booking = %v", got)
	}
	e.Must(t, 204, "PUT", bookings+"/cancel/bk-cancel", e.Reseller1, "") // idempotent
	if b, _ := e.sim.Booking(booking.PartnerID("booking", catalogtest.ChannelA, "bk-cancel")); b.Status != schemas.BookingCancelled {
		t.Fatalf("partner booking status = %s", b.Status)
	}
	rs := rules{
		e.Reseller1.ID:  {ID: "r1", Type: schemas.TypeBooking, Config: registry.Config{Operations: []string{schemas.OperationCanceled}}},
		e.Reseller1b.ID: {ID: "r1b", Type: schemas.TypeBooking, Config: registry.Config{Operations: []string{schemas.OperationTicketsAdded}}},
		e.Reseller2.ID:  {ID: "r2", Type: schemas.TypeBooking, Config: registry.Config{Operations: []string{schemas.OperationCanceled}}},
	}
	notes := e.process(t, rs)
	if len(notes) != 1 {
		t.Fatalf("notifications = %+v, want one (reseller 1; 1b does not subscribe to canceled; 2 is another channel)", notes)
	}
	n := notes[0]
	p := payload(t, n)
	if n.Subscriber != e.Reseller1.ID || n.Type != schemas.TypeBooking || p.Operation != schemas.OperationCanceled ||
		p.BookingID != "bk-cancel" || p.ResellerBookingReference != "MY-REF-7" || p.StartTime != start0.Format(time.RFC3339) {
		t.Fatalf("notification %+v payload %+v", n, p)
	}
	// Redelivery produces the same id.
	if again := e.process(t, rs); len(again) != 1 || again[0].ID != n.ID {
		t.Fatalf("redelivery: %+v", again)
	}
}

func TestCancelDiscoveredFromThePartner_IsNotified(t *testing.T) {
	e := start(t, partnersim.TxConfig{})
	h := e.hold(t, "", 1)
	e.Must(t, 201, "POST", bookings, e.Reseller1, bookingBody("bk-pc", h, rateA, 1, ""))
	e.sim.CancelBooking(booking.PartnerID("booking", catalogtest.ChannelA, "bk-pc"))
	got := decode(t, e.Must(t, 200, "GET", bookings+"/bk-pc", e.Reseller1, ""))
	if got["booking"].(map[string]any)["status"] != schemas.BookingCancelled {
		t.Fatalf("booking = %v", got)
	}
	notes := e.process(t, rules{e.Reseller1.ID: {ID: "r1", Type: schemas.TypeBooking}})
	if len(notes) != 1 || payload(t, notes[0]).Operation != schemas.OperationCanceled {
		t.Fatalf("notifications = %+v", notes)
	}
}

func TestAcceptedBooking_PolledUntilTicketsThenTicketsAdded(t *testing.T) {
	e := start(t, partnersim.TxConfig{AcceptBookings: true, TicketsAfter: 300 * time.Millisecond})
	h := e.hold(t, "", 2)
	got := decode(t, e.Must(t, 202, "POST", bookings, e.Reseller1, bookingBody("bk-202", h, rateA, 2, "R-202")))
	if b := got["booking"].(map[string]any); b["status"] != schemas.BookingPending || b["tickets"] != nil {
		t.Fatalf("accepted booking = %v", b)
	}
	e.Must(t, 202, "POST", bookings, e.Reseller1, bookingBody("bk-202", h, rateA, 2, "R-202")) // a retry: the same answer

	poller := bookingchange.NewPoller(bookingchange.PollerOptions{Bookings: e.svc})
	calls := e.sim.TxCalls()
	deadline := time.Now().Add(10 * time.Second)
	for {
		poller.Poll(context.Background())
		rec, err := e.svc.Record(context.Background(), catalogtest.ChannelA, "bk-202")
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Booking.Tickets) > 0 {
			if rec.AwaitingTickets || rec.Change != schemas.ChangeTicketsAdded {
				t.Fatalf("record = %+v", rec)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("tickets never attached")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if e.sim.TxCalls()-calls < 2 {
		t.Fatalf("partner polled %d times", e.sim.TxCalls()-calls)
	}
	got = decode(t, e.Must(t, 200, "GET", bookings+"/bk-202", e.Reseller1, ""))
	if b := got["booking"].(map[string]any); b["status"] != schemas.BookingOpen || len(b["tickets"].([]any)) != 1 {
		t.Fatalf("booking after tickets = %v", b)
	}
	notes := e.process(t, rules{e.Reseller1.ID: {ID: "r1", Type: schemas.TypeBooking}})
	if len(notes) != 1 {
		t.Fatalf("notifications = %+v, want one tickets-added", notes)
	}
	if p := payload(t, notes[0]); p.Operation != schemas.OperationTicketsAdded || p.BookingID != "bk-202" || p.ResellerBookingReference != "R-202" {
		t.Fatalf("payload = %+v", p)
	}
	// No longer pending: nothing to claim.
	if ids, err := e.svc.ClaimDue(context.Background(), 10); err != nil || len(ids) != 0 {
		t.Fatalf("still pending: %v %v", ids, err)
	}
}

// TestContract_HoldAndBookingCarryEveryField: whatever the partner leaves
// out, the reseller's hold and booking carry the contract (spec doc 2):
// item ids (generated when absent), each item's Rate as the channel reads
// it, retrieved on the hold, tickets with bookingItemIds and leadTraveler;
// meta.reqId mirrors the body's; expires is accepted in a hold request;
// a cancelled booking is final (cancelable false, tickets void).
func TestContract_HoldAndBookingCarryEveryField(t *testing.T) {
	e := start(t, partnersim.TxConfig{})
	body := strings.Replace(holdBody("hold-contract", rateA, 2), `{"hold":{`, `{"meta":{"reqId":"client-req-1"},"hold":{"expires":"2030-01-01T00:00:00Z",`, 1)
	got := decode(t, e.Must(t, 201, "POST", holds, e.Reseller1, body))
	if meta, _ := got["meta"].(map[string]any); meta["reqId"] != "client-req-1" {
		t.Fatalf("meta = %v, want the body's reqId mirrored", got["meta"])
	}
	h := got["hold"].(map[string]any)
	item := h["items"].([]any)[0].(map[string]any)
	rate, _ := item["rate"].(map[string]any)
	if h["retrieved"] == nil || h["expires"] == "2030-01-01T00:00:00Z" || item["id"] == nil || item["id"] == "" ||
		rate["id"] != rateA || rate["productId"] != prod || rate["holdablePeriod"] != float64(900) || len(rate["prices"].([]any)) != 2 {
		t.Fatalf("hold = %v", h)
	}
	again := decode(t, e.Must(t, 200, "GET", holds+"/hold-contract", e.Reseller1, ""))["hold"].(map[string]any)
	if again["retrieved"] == nil || again["items"].([]any)[0].(map[string]any)["id"] != item["id"] {
		t.Fatalf("hold read again = %v", again)
	}

	bbody := strings.Replace(bookingBody("bk-contract", "hold-contract", rateA, 2, "REF-C"), `{"booking":{`, `{"meta":{"reqId":"client-req-2"},"booking":{`, 1)
	got = decode(t, e.Must(t, 201, "POST", bookings, e.Reseller1, bbody))
	if meta, _ := got["meta"].(map[string]any); meta["reqId"] != "client-req-2" {
		t.Fatalf("meta = %v", got["meta"])
	}
	b := got["booking"].(map[string]any)
	bi := b["items"].([]any)[0].(map[string]any)
	tk := b["tickets"].([]any)[0].(map[string]any)
	lead, _ := tk["leadTraveler"].(map[string]any)
	if bi["id"] == nil || bi["rate"].(map[string]any)["id"] != rateA || b["cancelable"] != true ||
		fmt.Sprint(tk["bookingItemIds"]) != fmt.Sprint([]any{bi["id"]}) || lead["firstName"] != "Ada" || lead["isLead"] != true {
		t.Fatalf("booking = %v", b)
	}
	e.Must(t, 204, "PUT", bookings+"/cancel/bk-contract", e.Reseller1, "")
	b = decode(t, e.Must(t, 200, "GET", bookings+"/bk-contract", e.Reseller1, ""))["booking"].(map[string]any)
	if b["status"] != schemas.BookingCancelled || b["cancelable"] != false || b["tickets"].([]any)[0].(map[string]any)["status"] != booking.TicketVoid {
		t.Fatalf("cancelled booking = %v", b)
	}
	// A meta.reqId that is not a string is a bad value, named.
	status, raw := e.Do(t, "POST", holds, e.Reseller1, strings.Replace(holdBody("", rateA, 1), `{"hold":{`, `{"meta":{"reqId":7},"hold":{`, 1))
	if d, _ := decode(t, raw)["data"].(map[string]any); status != 400 || d["field"] != "meta.reqId" {
		t.Fatalf("meta.reqId 7: %d %s", status, raw)
	}
}

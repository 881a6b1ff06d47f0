// Package demo is what `make run` shows on a fresh machine: a simulated
// partner (internal/simulators/partnersim) behind a demo supplier and a simulated
// booking system (internal/simulators/bookingsim, spec doc 3) behind a second one whose
// products arrive by the scheduled full synchronization, the demo
// operator's products bound to the demo channel, a subscriber (the demo sink
// principal) with a rule of every notification type pointing at a
// built-in webhook sink that verifies every signature and logs what it
// received, and changes every few seconds (availability pushes, price
// schedules, product, rate, supplier and binding edits, holds, bookings,
// cancellations, accepted bookings whose tickets come later).
//
// It drives the running API over HTTP with the demo credentials, as an
// operator and a reseller would: it holds no business logic and touches
// no store, so what the demo shows is what users get. Demo mode only.
package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
	"github.com/switchbackhq/switchback/internal/simulators/partnersim"
	"github.com/switchbackhq/switchback/internal/webhook"
	"github.com/switchbackhq/switchback/schemas"
)

// Cred is an API key and secret.
type Cred struct{ Key, Secret string }

// Options configures Start.
type Options struct {
	// API is the base URL of the API listener, e.g. http://127.0.0.1:8080.
	API string
	// Operator owns the demo supplier; Subscriber (a reseller of
	// ChannelID) owns the rules that point at the sink.
	Operator, Subscriber Cred
	ChannelID            string
	// SinkAddr is the sink's listen address; "" picks a free loopback port.
	SinkAddr string
	// BookingSystemAddr is the simulated booking system's listen address
	// (SWITCHBACK_DEMO_BOOKINGSYSTEM_ADDR); "" picks a free loopback port.
	BookingSystemAddr string
	// PartnerAddr is the simulated partner's listen address
	// (SWITCHBACK_DEMO_PARTNER_ADDR); "" picks a free loopback port. A
	// fixed one keeps the demo supplier's connection across restarts, so
	// its bookings stay reachable (a booking is never sent to a changed
	// connection).
	PartnerAddr string
	// Interval between two rounds of changes. Default 3 s.
	Interval time.Duration
	Logger   *slog.Logger
	// Registerer gets switchback_demo_sink_received_total.
	Registerer prometheus.Registerer
}

// Demo ids: fixed, so that restarts reuse the same data.
const (
	SupplierID     = "demo-alpine"
	ProductGlacier = "demo-glacier" // START_TIME
	ProductCanyon  = "demo-canyon"  // OPENING_HOURS
	RateAdult      = "demo-adult"
	RateChild      = "demo-child"
	RateDay        = "demo-day"
	// On the simulated booking system (its own names).
	BookingSupplierID     = "S1"
	BookingProductID      = "S1-P1" // START_TIME, options S1-P1-O1 and -O2
	BookingOpeningHoursID = "S1-P2" // OPENING_HOURS (FREESALE)
)

// ruleTypes: notification type → registry path of its CRUD (spec doc 1:
// /channelbindings for the CRUD of channelbinding rules).
var ruleTypes = []struct{ typ, path, config string }{
	{schemas.TypeChannelBinding, "channelbindings", ``},
	{schemas.TypeSupplier, "supplier", ``},
	{schemas.TypeProduct, "product", ``},
	{schemas.TypeRate, "rate", ``},
	{schemas.TypeAvailability, "availability", `{"maxLookAheadDays":14}`},
	{schemas.TypePriceSchedule, "priceschedule", `{"maxLookAheadDays":30}`},
	{schemas.TypeBooking, "booking", ``},
}

// Demo is a running demo.
type Demo struct {
	opts     Options
	log      *slog.Logger
	http     *http.Client
	sim      *partnersim.Server
	partner  *http.Server
	partURL  string
	booking  *http.Server // the simulated booking system (spec doc 3)
	bookURL  string
	sink     *http.Server
	sinkURL  string
	received *prometheus.CounterVec

	// bsBound: the booking-system products are bound (the rounds'
	// goroutine only).
	bsBound bool

	mu   sync.Mutex
	keys map[string]string // notification type → securityKey of its rule
	seen map[string]int    // notification type → verified notifications

	cancel context.CancelFunc
	done   chan struct{}
}

// Start opens the simulated partner and the sink, then sets the demo up
// and keeps changing it in the background until Close.
func Start(opts Options) (*Demo, error) {
	if opts.Interval <= 0 {
		opts.Interval = 3 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	d := &Demo{opts: opts, log: opts.Logger.With("part", "demo"), http: &http.Client{Timeout: 10 * time.Second},
		keys: map[string]string{}, seen: map[string]int{}, done: make(chan struct{}),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_demo_sink_received_total",
			Help: "Webhooks the demo sink received, by notification type and whether the signature verified.",
		}, []string{"type", "verified"}),
	}
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(d.received); err != nil {
			return nil, fmt.Errorf("demo metrics: %w", err)
		}
	}
	d.sim = partnersim.New(partnersim.Config{APIKey: "demo-partner-key", APISecret: "demo-partner-secret",
		Rates:      map[string][]string{ProductGlacier: {RateAdult, RateChild}, ProductCanyon: {RateDay}},
		ChangeRate: 0.3, ChangeEvery: time.Minute, Seed: 7,
		TxConfig: partnersim.TxConfig{TicketsAfter: 2 * time.Second}})
	pl, err := listenLocal(opts.PartnerAddr, "partner", "SWITCHBACK_DEMO_PARTNER_ADDR")
	if err != nil {
		return nil, err
	}
	bl, err := listenLocal(opts.BookingSystemAddr, "booking system", "SWITCHBACK_DEMO_BOOKINGSYSTEM_ADDR")
	if err != nil {
		pl.Close()
		return nil, err
	}
	d.bookURL = "http://" + bl.Addr().String()
	// Its inventory moves every minute, so each change notification the
	// demo sends finds news.
	// Two suppliers: the demo connects S1; S2 is left for the README's
	// operator walk-through to connect.
	d.booking = &http.Server{Handler: bookingsim.New(bookingsim.Config{APIKey: "demo-booking-token", Suppliers: 2, ProductsPerSupplier: 2,
		ChangeRate: 0.3, ChangeEvery: time.Minute}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = d.booking.Serve(bl) }()
	sl, err := listenLocal(opts.SinkAddr, "sink", "SWITCHBACK_DEMO_SINK_ADDR")
	if err != nil {
		pl.Close()
		_ = d.booking.Close()
		return nil, err
	}
	d.partURL, d.sinkURL = "http://"+pl.Addr().String(), "http://"+sl.Addr().String()
	d.partner = &http.Server{Handler: d.sim, ReadHeaderTimeout: 5 * time.Second}
	d.sink = &http.Server{Handler: http.HandlerFunc(d.receive), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = d.partner.Serve(pl) }()
	go func() { _ = d.sink.Serve(sl) }()

	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	go func() {
		defer close(d.done)
		d.run(ctx)
	}()
	return d, nil
}

// BookingSystemURL is the base URL of the simulated booking system.
func (d *Demo) BookingSystemURL() string { return d.bookURL }

// SinkURL is the base URL of the webhook sink.
func (d *Demo) SinkURL() string { return d.sinkURL }

// Received is how many verified notifications of each type the sink got.
func (d *Demo) Received() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]int, len(d.seen))
	for k, v := range d.seen {
		out[k] = v
	}
	return out
}

// Close stops the changes, the sink and the partner.
func (d *Demo) Close(ctx context.Context) error {
	_ = d.Stop(ctx)
	return errors.Join(d.sink.Shutdown(ctx), d.partner.Shutdown(ctx), d.booking.Shutdown(ctx))
}

// Stop ends the demo's rounds of changes; the sink and the simulated
// systems serve until Close. A process stops the changes first and the
// systems last, after its own tiers: a booking poller or a webhook still
// in flight then finds its counterpart there.
func (d *Demo) Stop(ctx context.Context) error {
	d.cancel()
	select {
	case <-d.done:
	case <-ctx.Done():
	}
	return nil
}

// receive is the webhook sink: the path names the type; the signature is
// checked with the securityKey of the rule of that type.
func (d *Demo) receive(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	typ := strings.Trim(r.URL.Path, "/")
	d.mu.Lock()
	key := d.keys[typ]
	d.mu.Unlock()
	if key == "" {
		// A rule the demo does not own (the banner's example points the
		// user's own rule here): its securityKey is the user's.
		d.received.WithLabelValues("other", "unchecked").Inc()
		d.log.Info("demo sink: received for a rule the demo does not own (signature not checked here: `switchback verify` does it with your securityKey)",
			"path", r.URL.Path, "deliveryId", r.Header.Get(schemas.HeaderDeliveryID), "body", string(body))
		w.WriteHeader(http.StatusOK)
		return
	}
	verr := webhook.VerifyBody(key, body)
	verified := verr == nil
	d.received.WithLabelValues(typ, fmt.Sprint(verified)).Inc()
	var fields map[string]any
	_ = json.Unmarshal(body, &fields)
	delete(fields, "signature")
	if !verified {
		d.log.Warn("demo sink: signature did NOT verify", "type", typ, "deliveryId", r.Header.Get(schemas.HeaderDeliveryID), "error", verr)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	d.mu.Lock()
	d.seen[typ]++
	first := d.seen[typ] == 1
	d.mu.Unlock()
	// The first of each type at info shows the demo working; the rest, a
	// few a second, at debug (switchback_demo_sink_received_total counts
	// them all).
	lvl := slog.LevelDebug
	if first {
		lvl = slog.LevelInfo
	}
	d.log.Log(r.Context(), lvl, "demo sink: verified notification", "type", typ, "first", first, "deliveryId", r.Header.Get(schemas.HeaderDeliveryID), "payload", fields)
	w.WriteHeader(http.StatusOK)
}

// run sets the demo up (retrying until the API takes it), then changes
// something every Interval.
func (d *Demo) run(ctx context.Context) {
	for attempt := 0; ; attempt++ {
		err := d.setup(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		if attempt > 3 {
			d.log.Warn("demo setup not done yet; retrying", "error", err)
		}
		if sleep(ctx, time.Second) != nil {
			return
		}
	}
	d.log.Info("demo ready: changes every few seconds; the sink logs the first verified notification of each type (every one at SWITCHBACK_LOG_LEVEL=debug)", "sink", d.sinkURL)
	t := time.NewTicker(d.opts.Interval)
	defer t.Stop()
	for tick := 1; ; tick++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := d.round(ctx, tick); err != nil && ctx.Err() == nil {
			d.log.Warn("demo round failed; carrying on", "round", tick, "error", err)
		}
	}
}

// setup creates (or finds, after a restart) the supplier, products,
// rates, bindings and rules. Every step accepts "already there".
func (d *Demo) setup(ctx context.Context) error {
	op := d.opts.Operator
	steps := []struct{ method, path, body string }{
		{"POST", "/channel/v1.2/suppliers", supplierBody(d.partURL, 0)},
		{"POST", "/channel/v1.2/suppliers/" + SupplierID + "/products", productBody(ProductGlacier, "Glacier walk", "START_TIME", 0)},
		{"POST", "/channel/v1.2/suppliers/" + SupplierID + "/products", productBody(ProductCanyon, "Canyon day pass", "OPENING_HOURS", 0)},
		{"POST", prodPath(ProductGlacier) + "/rates", rateBody(RateAdult, "Adult", 0)},
		{"POST", prodPath(ProductGlacier) + "/rates", rateBody(RateChild, "Child", 0)},
		{"POST", prodPath(ProductCanyon) + "/rates", rateBody(RateDay, "Day pass", 0)},
		{"POST", prodPath(ProductGlacier) + "/channels/" + d.opts.ChannelID, `{"priceAt":"PRICE_AT_SALE","rateIds":["` + RateAdult + `","` + RateChild + `"]}`},
		{"POST", prodPath(ProductCanyon) + "/channels/" + d.opts.ChannelID, `{"priceAt":"PRICE_AT_SALE"}`},
		// A supplier on the simulated booking system (spec doc 3): the
		// operator only connects it; its first full synchronization
		// (seconds after it is connected) brings its products and options
		// with the simulator's names (S1-P1 START_TIME, S1-P2
		// OPENING_HOURS, options -O1/-O2), and the rounds bind them once
		// they are there (bindBookingSystem).
		{"POST", "/channel/v1.2/suppliers", bookingSupplierBody(d.bookURL)},
	}
	// Rules first, so that the bindings below already notify the sink.
	for _, r := range ruleTypes {
		if err := d.ensureRule(ctx, r.typ, r.path, r.config); err != nil {
			return err
		}
	}
	for _, s := range steps {
		status, body, err := d.call(ctx, op, s.method, s.path, s.body)
		if err != nil {
			return err
		}
		if status != http.StatusCreated && status != http.StatusOK && status != http.StatusConflict {
			return fmt.Errorf("%s %s: %d %s", s.method, s.path, status, body)
		}
	}
	// The supplier's partner address changes with every start: point the
	// supplier at this one.
	if status, body, err := d.call(ctx, op, "PUT", "/channel/v1.2/suppliers/"+SupplierID, supplierBody(d.partURL, 0)); err != nil || status != http.StatusOK {
		return fmt.Errorf("point the demo supplier at the simulated partner: %d %s %v", status, body, err)
	}
	if status, body, err := d.call(ctx, op, "PUT", "/channel/v1.2/suppliers/"+BookingSupplierID, bookingSupplierBody(d.bookURL)); err != nil || status != http.StatusOK {
		return fmt.Errorf("point the demo booking-system supplier at the simulator: %d %s %v", status, body, err)
	}
	return nil
}

// ensureRule creates the subscriber's rule of a type pointing at the sink,
// or, after a restart, points the existing one at this sink.
func (d *Demo) ensureRule(ctx context.Context, typ, path, config string) error {
	sub := d.opts.Subscriber
	rule := map[string]any{"url": d.sinkURL + "/" + typ}
	if config != "" {
		rule["config"] = json.RawMessage(config)
	}
	raw, _ := json.Marshal(rule)
	status, body, err := d.call(ctx, sub, "POST", "/registry/v1.1/"+path, string(raw))
	if err != nil {
		return err
	}
	if status == http.StatusConflict {
		status, body, err = d.call(ctx, sub, "GET", "/registry/v1.1/"+path, "")
		if err != nil {
			return err
		}
		var rules []map[string]any
		if status != http.StatusOK || json.Unmarshal(body, &rules) != nil || len(rules) == 0 {
			return fmt.Errorf("read the %s rule: %d %s", typ, status, body)
		}
		rule["id"] = rules[0]["id"]
		raw, _ = json.Marshal(rule)
		if status, body, err = d.call(ctx, sub, "PUT", "/registry/v1.1/"+path, string(raw)); err != nil {
			return err
		}
	}
	if status != http.StatusOK && status != http.StatusCreated {
		return fmt.Errorf("%s rule: %d %s", typ, status, body)
	}
	var got struct {
		SecurityKey string `json:"securityKey"`
	}
	if err := json.Unmarshal(body, &got); err != nil || got.SecurityKey == "" {
		return fmt.Errorf("%s rule answer without a securityKey: %s", typ, body)
	}
	d.mu.Lock()
	d.keys[typ] = got.SecurityKey
	d.mu.Unlock()
	return nil
}

// round makes the changes of one tick. Each kind of change comes back
// every few rounds, so that every notification type flows within seconds.
func (d *Demo) round(ctx context.Context, tick int) error {
	op, sub := d.opts.Operator, d.opts.Subscriber
	day := time.Now().UTC().Truncate(24 * time.Hour)
	var errs []error
	do := func(who Cred, method, path, body string, ok ...int) []byte {
		status, got, err := d.call(ctx, who, method, path, body)
		if err == nil && !contains(ok, status) {
			err = fmt.Errorf("%s %s: %d %s", method, path, status, got)
		}
		if err != nil {
			errs = append(errs, err)
		}
		return got
	}
	if !d.bsBound {
		d.bsBound = d.bindBookingSystem(ctx, &errs)
	}
	// Availability pushed by the operator: three windows tomorrow and the
	// day after, vacancies moving every round.
	do(op, "PUT", prodPath(ProductGlacier)+"/rates/"+RateAdult+"/availabilities", availabilityBody(day, tick), 200)
	// A reseller read of the partner-backed product (fills the cache,
	// snapshots to the processor; refreshed after 5 minutes).
	do(sub, "GET", fmt.Sprintf("/v1.2/suppliers/%s/products/%s/availabilities?start=%s&end=%s", SupplierID, ProductCanyon,
		day.AddDate(0, 0, 1).Format(time.RFC3339), day.AddDate(0, 0, 3).Format(time.RFC3339)), "", 200)
	switch tick % 6 {
	case 0:
		do(op, "PUT", prodPath(ProductGlacier), productBody(ProductGlacier, "Glacier walk", "START_TIME", tick), 200)
	case 1:
		do(op, "PUT", prodPath(ProductGlacier)+"/rates/"+RateAdult+"/priceschedule", priceScheduleBody(day, tick), 200)
	case 2:
		do(op, "PUT", prodPath(ProductGlacier)+"/rates/"+RateChild, rateBody(RateChild, "Child", tick), 200)
	case 3:
		do(op, "PUT", "/channel/v1.2/suppliers/"+SupplierID, supplierBody(d.partURL, tick), 200)
	case 4:
		rates := `["` + RateAdult + `","` + RateChild + `"]`
		if tick%12 == 4 {
			rates = `["` + RateAdult + `"]`
		}
		do(op, "PUT", prodPath(ProductGlacier)+"/channels/"+d.opts.ChannelID, `{"priceAt":"PRICE_AT_SALE","rateIds":`+rates+`}`, 200)
	case 5:
		// The operator's change notification: the booking system is read
		// at once for the next week, and what moved is notified.
		start := day.Format(time.DateOnly)
		do(op, "POST", fmt.Sprintf("/operator/v2/notifications?supplierId=%s&productId=%s&startDate=%s&endDate=%s", BookingSupplierID, BookingProductID,
			start, day.AddDate(0, 0, 7).Format(time.DateOnly)), "", 201)
		d.book(ctx, tick, day, false, &errs) // then cancelled: canceled
		d.book(ctx, tick, day, true, &errs)  // accepted (202): tickets-added later
		if d.bsBound {
			d.bookAtBookingSystem(ctx, tick, day, &errs)
		}
	}
	return errors.Join(errs...)
}

// book holds and books at the partner-backed product. An accepted
// booking (the partner answers 202) gets its tickets later
// (tickets-added); any other is cancelled at once (canceled).
func (d *Demo) book(ctx context.Context, tick int, day time.Time, accepted bool, errs *[]error) {
	sub := d.opts.Subscriber
	at := day.AddDate(0, 0, 2).Add(9 * time.Hour).Format(time.RFC3339)
	item := fmt.Sprintf(`{"supplierId":%q,"productId":%q,"rateId":%q,"quantity":1`, SupplierID, ProductCanyon, RateDay)
	holdID, _, ok := d.hold(ctx, "hold", item, at, errs)
	if !ok {
		return
	}
	d.sim.Update(func(c *partnersim.Config) { c.AcceptBookings = accepted })
	id := fmt.Sprintf("demo-booking-%d-%d-%t", time.Now().Unix(), tick, accepted)
	status, body, err := d.call(ctx, sub, "POST", "/v1.2/bookings", fmt.Sprintf(`{"booking":{"id":%q,"holdId":%q,"resellerBookingRef":"DEMO-%d","items":[%s,"startTime":%q}]}}`,
		id, holdID, tick, item, at))
	d.sim.Update(func(c *partnersim.Config) { c.AcceptBookings = false })
	if err != nil || (status != http.StatusCreated && status != http.StatusAccepted) {
		*errs = append(*errs, fmt.Errorf("booking: %d %s %v", status, body, err))
		return
	}
	if accepted {
		return // tickets-added follows once the partner attaches them
	}
	d.cancelBooking(ctx, "cancel", id, errs)
}

// hold holds item (a hold item's JSON, open for its "at") at at as the
// subscriber and returns the hold's id and the answer's status; what names
// the step in the error it adds to errs when the hold is refused with a
// status other than the expected ones.
func (d *Demo) hold(ctx context.Context, what, item, at string, errs *[]error, expected ...int) (string, int, bool) {
	status, body, err := d.call(ctx, d.opts.Subscriber, "POST", "/v1.2/holds", `{"hold":{"items":[`+item+`,"at":"`+at+`"}]}}`)
	if err != nil || status != http.StatusCreated {
		if err != nil || !slices.Contains(expected, status) {
			*errs = append(*errs, fmt.Errorf("%s: %d %s %v", what, status, body, err))
		}
		return "", status, false
	}
	var h struct {
		Hold struct {
			ID string `json:"id"`
		} `json:"hold"`
	}
	_ = json.Unmarshal(body, &h)
	return h.Hold.ID, status, true
}

// cancelBooking cancels the subscriber's booking id; what names the step in the
// error it adds to errs when the cancel is refused.
func (d *Demo) cancelBooking(ctx context.Context, what, id string, errs *[]error) {
	if status, body, err := d.call(ctx, d.opts.Subscriber, "PUT", "/v1.2/bookings/cancel/"+id, ""); err != nil || status != http.StatusNoContent {
		*errs = append(*errs, fmt.Errorf("%s: %d %s %v", what, status, body, err))
	}
}

// bindBookingSystem binds the booking-system supplier's products to the
// demo channel once its first synchronization has brought them (404
// until then: tried again next round). It reports whether both are bound.
func (d *Demo) bindBookingSystem(ctx context.Context, errs *[]error) bool {
	bound := true
	for _, pid := range []string{BookingProductID, BookingOpeningHoursID} {
		status, body, err := d.call(ctx, d.opts.Operator, "POST", bookingProdPath(pid)+"/channels/"+d.opts.ChannelID, `{"priceAt":"PRICE_AT_SALE"}`)
		switch {
		case err == nil && (status == http.StatusCreated || status == http.StatusConflict):
		case err == nil && status == http.StatusNotFound:
			bound = false // not synchronized yet
		default:
			bound = false
			*errs = append(*errs, fmt.Errorf("bind %s: %d %s %v", pid, status, body, err))
		}
	}
	if bound {
		d.log.Info("demo: the booking-system supplier's products arrived by its first synchronization and are bound", "supplier", BookingSupplierID)
	}
	return bound
}

// bookAtBookingSystem holds, books and cancels one place at the
// booking-system supplier (spec doc 3: createBooking on hold, confirmed,
// then cancelled): the reseller picks an availability id from its
// availability read, as doc 3 requires it when booking.
func (d *Demo) bookAtBookingSystem(ctx context.Context, tick int, day time.Time, errs *[]error) {
	sub := d.opts.Subscriber
	const rate = BookingProductID + "-O1"
	status, body, err := d.call(ctx, sub, "GET", fmt.Sprintf("/v1.2/suppliers/%s/products/%s/availabilities?start=%s&end=%s", BookingSupplierID,
		BookingProductID, day.AddDate(0, 0, 1).Format(time.RFC3339), day.AddDate(0, 0, 8).Format(time.RFC3339)), "")
	if err != nil || status != http.StatusOK {
		*errs = append(*errs, fmt.Errorf("booking-system availability: %d %s %v", status, body, err))
		return
	}
	var av struct {
		Availabilities struct {
			ByRate map[string]struct {
				Availability []struct {
					ID       string `json:"id"`
					Start    string `json:"start"`
					Capacity int    `json:"capacity"`
				} `json:"availability"`
			} `json:"byRate"`
		} `json:"availabilities"`
	}
	_ = json.Unmarshal(body, &av)
	var id, at string
	for _, a := range av.Availabilities.ByRate[rate].Availability {
		if a.Capacity > 0 {
			id, at = a.ID, a.Start
			break
		}
	}
	if id == "" {
		return // sold out this week, or not synchronized yet
	}
	item := fmt.Sprintf(`{"supplierId":%q,"productId":%q,"rateId":%q,"availabilityId":%q,"quantity":1`, BookingSupplierID, BookingProductID, rate, id)
	holdID, status, ok := d.hold(ctx, "booking-system hold", item, at, errs, http.StatusConflict)
	if !ok {
		if status == http.StatusConflict {
			// The simulated booking system moves a third of its slots every
			// minute, and Switchback's copy of its availability is up to
			// its freshness window old: the slot read as open was sold out
			// meanwhile, which the booking system says at hold time. That
			// is the race every reseller meets, not a failure of the demo.
			d.log.Info("demo booking-system hold refused: the slot sold out since it was read; next round tries again", "round", tick)
		}
		return
	}
	bid := fmt.Sprintf("demo-bs-booking-%d-%d", time.Now().Unix(), tick)
	status, body, err = d.call(ctx, sub, "POST", "/v1.2/bookings", fmt.Sprintf(
		`{"booking":{"id":%q,"holdId":%q,"resellerBookingRef":"DEMO-BS-%d","customer":{"firstName":"Demo","lastName":"Traveller","email":"demo@example.com"},"items":[%s,"startTime":%q}]}}`,
		bid, holdID, tick, item, at))
	if err != nil || status != http.StatusCreated {
		*errs = append(*errs, fmt.Errorf("booking-system booking: %d %s %v", status, body, err))
		return
	}
	d.cancelBooking(ctx, "booking-system cancel", bid, errs)
}

// listenLocal listens on addr, a free loopback port when it is empty;
// what and env (the setting) name the listener in the error.
func listenLocal(addr, what, env string) (net.Listener, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("demo %s listener on %s (%s): %w", what, addr, env, err)
	}
	return ln, nil
}

// call makes one API request.
func (d *Demo) call(ctx context.Context, who Cred, method, path, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, d.opts.API+path, bytes.NewReader([]byte(body)))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-API-Key", who.Key)
	req.Header.Set("X-API-Secret", who.Secret)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, raw, err
}

func contains(ok []int, status int) bool {
	for _, s := range ok {
		if s == status {
			return true
		}
	}
	return false
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func prodPath(pid string) string {
	return "/channel/v1.2/suppliers/" + SupplierID + "/products/" + pid
}

func supplierBody(partnerURL string, v int) string {
	return fmt.Sprintf(`{"id":%q,"name":"Alpine Adventures","code":"ALPINE","partnerId":"p-alpine",
"title":"Alpine Adventures (demo, edit %d)","description":"A demo supplier of Switchback",
"mainLocation":{"name":"Base","title":"Base camp","address":{"countryCode":"CHE","locality":"Zermatt"},"longLat":{"latitude":46.02,"longitude":7.75},"type":"MEETING_POINT","city":"Zermatt"},
"connection":{"kind":"partner","baseUrl":%q,"credentials":{"apiKey":"demo-partner-key","apiSecret":"demo-partner-secret"}}}`, SupplierID, v, partnerURL)
}

func productBody(id, name, availabilityType string, v int) string {
	return fmt.Sprintf(`{"id":%q,"name":%q,"description":"%s (demo, edit %d)","timeZone":"Europe/Zurich",
"availabilityType":%q,"deliveryFormats":["QR_CODE"],"deliveryMethods":["TICKET"],"redemptionMethod":"DIGITAL",
"instantConfirmation":true,"locations":[{"name":"Start","type":"START","order":1}]}`, id, name, name, v, availabilityType)
}

func rateBody(id, name string, v int) string {
	return fmt.Sprintf(`{"id":%q,"name":"%s","title":"%s (edit %d)","cancelable":true,"holdable":true,"holdablePeriod":900,"maxTravelers":10,"minTravelers":1,
"prices":[{"id":"std","labels":["public"],"name":"Standard","retail":{"amount":%d,"currency":"CHF"}}]}`, id, name, name, v, 40+v%5)
}

// availabilityBody: three windows a day, tomorrow and the day after, with
// vacancies that move every round.
func availabilityBody(day time.Time, tick int) string {
	var items []string
	for d := 1; d <= 2; d++ {
		for i, h := range []int{9, 13, 17} {
			start := day.AddDate(0, 0, d).Add(time.Duration(h) * time.Hour)
			items = append(items, fmt.Sprintf(`{"id":"w-%d-%d","start":%q,"end":%q,"capacity":%d,"maxCapacity":20}`,
				d, h, start.Format(time.RFC3339), start.Add(2*time.Hour).Format(time.RFC3339), (tick*7+d*3+i*5)%21))
		}
	}
	return `{"availabilities":[` + strings.Join(items, ",") + `]}`
}

// priceScheduleBody: the next ten days at a price that moves every time.
func priceScheduleBody(day time.Time, tick int) string {
	return fmt.Sprintf(`{"entries":[{"from":%q,"until":%q,"prices":[{"id":"std","labels":["public"],"name":"Standard","retail":{"amount":%d,"currency":"CHF"}}]}]}`,
		day.Format(time.DateOnly), day.AddDate(0, 0, 9).Format(time.DateOnly), 40+tick%7)
}

func bookingProdPath(pid string) string {
	return "/channel/v1.2/suppliers/" + BookingSupplierID + "/products/" + pid
}

func bookingSupplierBody(endpoint string) string {
	return fmt.Sprintf(`{"id":%q,"name":"Fjord Lines","code":"FJORD","title":"Fjord Lines (demo, booking system v2)",
"connection":{"kind":"bookingsystem","baseUrl":%q,"credentials":{"bearerToken":"demo-booking-token"}}}`, BookingSupplierID, endpoint)
}

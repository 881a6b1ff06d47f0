package bookingsim

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/switchbackhq/switchback/internal/octowire"
)

// The OCTO dialect (Config.Dialect "octo"): the same inventory and state
// machine spoken as the public OCTO standard. One endpoint per supplier:
// supplier S<n> is served under /S<n>, so its endpoint is <base>/S<n>, and
// no path names a supplier after it.
//
//	GET  /supplier                  the supplier
//	GET  /products                  its products (Octo-Capabilities read)
//	GET  /products/{id}             one product; 400 INVALID_PRODUCT_ID
//	POST /availability              {productId, optionId, localDate |
//	                                localDateStart+localDateEnd (end
//	                                inclusive, as OCTO) | availabilityIds,
//	                                units?}: OCTO availability objects;
//	                                "available" says whether the units (or
//	                                one unit) fit; unitPricing with the
//	                                octo/pricing capability
//	POST /bookings                  {uuid, productId, optionId,
//	                                availabilityId, unitItems,
//	                                expirationMinutes?, notes?,
//	                                resellerReference?}
//	GET  /bookings/{uuid}
//	POST /bookings/{uuid}/confirm   {contact (required), resellerReference?, unitItems?}
//	POST /bookings/{uuid}/cancel    {reason?, force?} (DELETE /bookings/{uuid} too)
//	POST /bookings/{uuid}/extend    {expirationMinutes?}
//
// Errors are OCTO's: 400 with INVALID_PRODUCT_ID, INVALID_OPTION_ID,
// INVALID_UNIT_ID, INVALID_AVAILABILITY_ID, INVALID_BOOKING_UUID (also for
// an unknown booking), BAD_REQUEST or UNPROCESSABLE_ENTITY (a transition
// the state machine refuses); 401, 403, 404 for an unknown path.

// defaultOCTOExpirationMinutes is the hold when a reservation states no
// expirationMinutes (OCTO: "defaults to the supplier default amount").
const defaultOCTOExpirationMinutes = 30

// The OCTO shapes are internal/octowire's, as query/octo writes them. Two
// stay the simulator's own: the supplier's contact (a map of the two
// fields the simulator knows, as it always answered) and the booking,
// whose availability is the short object {id, localDateTimeStart,
// localDateTimeEnd, allDay, openingHours} Switchback's client reads, where
// OCTO's Booking (octowire.Booking) carries a full Availability.
type (
	// octoExtras is what an availability shows in OCTO only.
	octoExtras struct {
		utcCutoffAt  string
		capacity     *int
		allDay       bool
		openingHours []octowire.OpeningHours
		unitPricing  []octowire.PricingUnit
	}
	octoSupplier struct {
		ID       string            `json:"id"`
		Name     string            `json:"name"`
		Endpoint string            `json:"endpoint"`
		Contact  map[string]string `json:"contact"`
	}
	// octoProduct is the v2 product without doc 3's capabilities list
	// (a nil field of the outer struct shadows the embedded one) and with
	// OCTO's availabilityRequired and allowFreesale.
	octoProduct struct {
		wireProduct
		Capabilities         []any `json:"capabilities,omitempty"`
		AvailabilityRequired bool  `json:"availabilityRequired"`
		AllowFreesale        bool  `json:"allowFreesale"`
		// With the octo/pricing capability (OCTO's example values).
		DefaultCurrency     string   `json:"defaultCurrency,omitempty"`
		AvailableCurrencies []string `json:"availableCurrencies,omitempty"`
		PricingPer          string   `json:"pricingPer,omitempty"`
	}
	octoBookingAvailability struct {
		ID                 string                  `json:"id"`
		LocalDateTimeStart string                  `json:"localDateTimeStart"`
		LocalDateTimeEnd   string                  `json:"localDateTimeEnd"`
		AllDay             bool                    `json:"allDay"`
		OpeningHours       []octowire.OpeningHours `json:"openingHours"`
	}
	octoBooking struct {
		ID                string                  `json:"id"`
		UUID              string                  `json:"uuid"`
		TestMode          bool                    `json:"testMode"`
		ResellerReference *string                 `json:"resellerReference"`
		SupplierReference *string                 `json:"supplierReference"`
		Status            string                  `json:"status"`
		UTCCreatedAt      string                  `json:"utcCreatedAt"`
		UTCUpdatedAt      string                  `json:"utcUpdatedAt"`
		UTCExpiresAt      *string                 `json:"utcExpiresAt"`
		UTCRedeemedAt     *string                 `json:"utcRedeemedAt"`
		UTCConfirmedAt    *string                 `json:"utcConfirmedAt"`
		ProductID         string                  `json:"productId"`
		OptionID          string                  `json:"optionId"`
		Cancellable       bool                    `json:"cancellable"`
		Cancellation      *octowire.Cancellation  `json:"cancellation"`
		Freesale          bool                    `json:"freesale"`
		AvailabilityID    string                  `json:"availabilityId"`
		Availability      octoBookingAvailability `json:"availability"`
		Contact           octowire.Contact        `json:"contact"`
		Notes             *string                 `json:"notes"`
		DeliveryMethods   []string                `json:"deliveryMethods"`
		Voucher           *octowire.Ticket        `json:"voucher"`
		UnitItems         []octowire.UnitItem     `json:"unitItems"`
	}
)

// octoExtras of a generated slot: the cutoff is the start (in UTC), the
// opening hours of an OPENING_HOURS slot are its range, or a day's ranges
// (OCTOOpeningHoursByDay: the slot is the whole day).
func (sl slot) octoExtras() octoExtras {
	x := octoExtras{utcCutoffAt: sl.start.UTC().Format(time.RFC3339), capacity: sl.capacity, openingHours: []octowire.OpeningHours{}}
	switch {
	case len(sl.ranges) > 0:
		x.allDay = true
		for _, r := range sl.ranges {
			x.openingHours = append(x.openingHours, octowire.OpeningHours{From: fmt.Sprintf("%02d:00", r.From), To: fmt.Sprintf("%02d:00", r.To)})
		}
	case sl.status == "FREESALE" || sl.capacity == nil:
		// An opening range (FREESALE, or a CLOSED day of one).
		x.openingHours = []octowire.OpeningHours{{From: sl.start.Format("15:04"), To: sl.end.Format("15:04")}}
	}
	return x
}

func (a wireAvailability) toOCTO() octowire.Availability {
	out := octowire.Availability{ID: a.ID, LocalDateTimeStart: a.LocalDateTimeStart, LocalDateTimeEnd: a.LocalDateTimeEnd, AllDay: a.octo.allDay,
		UTCCutoffAt: a.octo.utcCutoffAt, Available: a.Available != nil && *a.Available, Status: a.Status,
		Vacancies: a.Vacancies, Capacity: a.octo.capacity, OpeningHours: a.octo.openingHours}
	if len(a.octo.unitPricing) > 0 {
		out.UnitPricing = &a.octo.unitPricing
	}
	return out
}

// capabilities is the Octo-Capabilities header as a set.
func capabilities(r *http.Request) map[string]bool {
	out := map[string]bool{}
	for _, c := range strings.Split(r.Header.Get("Octo-Capabilities"), ",") {
		if c = strings.TrimSpace(c); c != "" {
			out[c] = true
		}
	}
	return out
}

func (s *Server) serveOCTO(w http.ResponseWriter, r *http.Request, cfg Config, fail func(int, string, string)) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) < 2 {
		fail(http.StatusNotFound, "NOT_FOUND", "no such route")
		return
	}
	sid, rest := parts[0], parts[1:]
	if _, ok := cfg.supplierNumber(sid); !ok {
		fail(http.StatusNotFound, "NOT_FOUND", "no such supplier endpoint")
		return
	}
	get, post := r.Method == http.MethodGet, r.Method == http.MethodPost
	switch {
	case len(rest) == 1 && rest[0] == "supplier" && get:
		writeJSON(w, http.StatusOK, octoSupplier{ID: sid, Name: "Supplier " + strings.TrimPrefix(sid, "S"),
			Endpoint: baseURL(r, cfg) + "/" + sid,
			Contact:  map[string]string{"website": "https://example.com", "email": "ops@example.com"}})
	case len(rest) == 1 && rest[0] == "products" && get:
		out := []octoProduct{}
		for _, p := range productList(cfg, sid) {
			out = append(out, octoProductOf(r, cfg, p))
		}
		writeJSON(w, http.StatusOK, out)
	case len(rest) == 2 && rest[0] == "products" && get:
		p, ok := cfg.product(sid, rest[1])
		if !ok {
			fail(http.StatusBadRequest, "INVALID_PRODUCT_ID", "unknown product")
			return
		}
		writeJSON(w, http.StatusOK, octoProductOf(r, cfg, p.wire))
	case len(rest) == 1 && rest[0] == "availability" && post:
		s.serveOCTOAvailability(w, r, cfg, sid, fail)
	case len(rest) == 1 && rest[0] == "bookings" && post:
		s.serveOCTOCreate(w, r, cfg, sid, fail)
	case len(rest) >= 2 && len(rest) <= 3 && rest[0] == "bookings":
		s.serveOCTOBooking(w, r, cfg, sid, rest[1:], fail)
	default:
		fail(http.StatusNotFound, "NOT_FOUND", "no such route")
	}
}

// octoProductOf is p in OCTO's shape, with the octo/pricing capability's
// fields when the request asks for it (OCTO's example: USD by default, USD
// and EUR, per unit).
func octoProductOf(r *http.Request, cfg Config, p wireProduct) octoProduct {
	out := octoProduct{wireProduct: p, AvailabilityRequired: true, AllowFreesale: true}
	if capabilities(r)["octo/pricing"] {
		out.wireProduct = withPricing(cfg, p, cfg.Clock())
		out.DefaultCurrency, out.AvailableCurrencies, out.PricingPer = "USD", []string{"USD", "EUR"}, "UNIT"
	}
	return out
}

// baseURL is the configured endpoint, else the request's scheme and host.
func baseURL(r *http.Request, cfg Config) string {
	if cfg.Endpoint != "" {
		return strings.TrimSuffix(cfg.Endpoint, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// serveOCTOAvailability is OCTO's POST /availability: a read by dates (end
// inclusive) or by availabilityIds, with the units to check (none: one
// unit). A read by dates carries cfg's breakages, as v2's GET does.
func (s *Server) serveOCTOAvailability(w http.ResponseWriter, r *http.Request, cfg Config, sid string, fail func(int, string, string)) {
	var in octowire.AvailabilityBody
	if err := decodeBody(r, &in); err != nil {
		fail(http.StatusBadRequest, "BAD_REQUEST", "invalid JSON body")
		return
	}
	p, ok := cfg.product(sid, in.ProductID)
	if !ok {
		fail(http.StatusBadRequest, "INVALID_PRODUCT_ID", "unknown productId")
		return
	}
	o, ok := p.option(in.OptionID)
	if !ok {
		fail(http.StatusBadRequest, "INVALID_OPTION_ID", "unknown optionId")
		return
	}
	qty := 0
	for _, u := range in.Units {
		if !hasUnit(o, u.ID) || u.Quantity < 0 {
			fail(http.StatusBadRequest, "INVALID_UNIT_ID", "unknown unit id or negative quantity")
			return
		}
		qty += u.Quantity
	}
	qty = max(qty, 1)
	var sls []slot
	byDates := false
	switch {
	case len(in.AvailabilityIDs) > 0:
		for _, id := range in.AvailabilityIDs {
			sl, ok := s.findSlot(cfg, p, in.OptionID, id)
			if !ok {
				fail(http.StatusBadRequest, "INVALID_AVAILABILITY_ID", "unknown availabilityId")
				return
			}
			sls = append(sls, sl)
		}
	default:
		start, end := in.LocalDateStart, in.LocalDateEnd
		if in.LocalDate != "" && start == "" && end == "" {
			start, end = in.LocalDate, in.LocalDate
		}
		from, err1 := time.Parse(time.DateOnly, start)
		last, err2 := time.Parse(time.DateOnly, end)
		if err1 != nil || err2 != nil || last.Before(from) || last.Sub(from) > 366*24*time.Hour {
			fail(http.StatusBadRequest, "BAD_REQUEST", "localDate, localDateStart and localDateEnd (inclusive) or availabilityIds are required")
			return
		}
		sls, byDates = s.slots(cfg, p, in.OptionID, from, last.AddDate(0, 0, 1), cfg.Clock()), true
	}
	pricing := capabilities(r)["octo/pricing"]
	as := make([]wireAvailability, 0, len(sls))
	for _, sl := range sls {
		a := sl.wire(cfg, in.OptionID)
		fits := sl.fits(qty)
		a.Available = &fits
		if pricing {
			for _, u := range o.Units {
				retail := retailPrice(cfg, o.ID, u.ID, sl.start)
				net := retail * 8 / 10
				a.octo.unitPricing = append(a.octo.unitPricing, octowire.PricingUnit{UnitID: u.ID, Pricing: octowire.Pricing{
					Original: retail, Retail: retail, Net: &net, Currency: "EUR", CurrencyPrecision: 2, IncludedTaxes: []octowire.Tax{}}})
			}
		}
		as = append(as, a)
	}
	if byDates {
		as = spoil(cfg, p.wire.AvailabilityType, as, sls)
	}
	out := make([]octowire.Availability, 0, len(as))
	for _, a := range as {
		out = append(out, a.toOCTO())
	}
	writeJSON(w, http.StatusOK, out)
}

// serveOCTOCreate is OCTO's booking reservation, through book.
func (s *Server) serveOCTOCreate(w http.ResponseWriter, r *http.Request, cfg Config, sid string, fail func(int, string, string)) {
	var ob octowire.ReservationBody
	if err := decodeBody(r, &ob); err != nil {
		fail(http.StatusBadRequest, "BAD_REQUEST", "invalid JSON body")
		return
	}
	in := createBody{UUID: ob.UUID, ResellerReference: ob.ResellerReference, ProductID: ob.ProductID, OptionID: ob.OptionID,
		AvailabilityID: ob.AvailabilityID, HoldExpirationMinutes: defaultOCTOExpirationMinutes, Notes: ob.Notes}
	if ob.UnitItems != nil {
		in.UnitItems = make([]wireUnitItem, len(*ob.UnitItems))
		for i, u := range *ob.UnitItems {
			in.UnitItems[i] = wireUnitItem{UUID: u.UUID, UnitID: u.UnitID, ResellerReference: u.ResellerReference}
		}
	}
	if ob.ExpirationMinutes != nil {
		in.HoldExpirationMinutes = *ob.ExpirationMinutes
	}
	out, serr := s.book(cfg, sid, in, cfg.Clock(), func(b *simBooking) any { return b.octoWire(cfg) })
	if serr != nil {
		fail(serr.status, serr.code, serr.msg)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// serveOCTOBooking is get, confirm, cancel and extend of one booking; an
// unknown uuid is OCTO's 400 INVALID_BOOKING_UUID.
func (s *Server) serveOCTOBooking(w http.ResponseWriter, r *http.Request, cfg Config, sid string, rest []string, fail func(int, string, string)) {
	now := cfg.Clock()
	s.tx.mu.Lock()
	defer s.tx.mu.Unlock()
	s.lapse(now)
	b := s.tx.bookings[rest[0]]
	if b == nil || b.supplierID != sid {
		fail(http.StatusBadRequest, "INVALID_BOOKING_UUID", "unknown booking")
		return
	}
	action := ""
	if len(rest) == 2 {
		action = rest[1]
	}
	refuse := func(what string) {
		fail(http.StatusBadRequest, "UNPROCESSABLE_ENTITY", "booking cannot be "+what+" from "+b.status)
	}
	switch {
	case action == "" && r.Method == http.MethodGet:
	case action == "confirm" && r.Method == http.MethodPost:
		// The contact is read in the shape it is answered in (nullable
		// fields), so that the booking shows it as it was sent.
		var in struct {
			Contact           *octowire.Contact `json:"contact"`
			ResellerReference *string           `json:"resellerReference"`
			UnitItems         []wireUnitItem    `json:"unitItems"`
			EmailReceipt      bool              `json:"emailReceipt"`
		}
		if err := decodeBody(r, &in); err != nil || in.Contact == nil {
			fail(http.StatusBadRequest, "BAD_REQUEST", "contact is required")
			return
		}
		if err := s.confirmBooking(cfg, b, now); err != nil {
			refuse("confirmed")
			return
		}
		b.contact = in.Contact
	case (action == "cancel" && r.Method == http.MethodPost) || (action == "" && r.Method == http.MethodDelete):
		var in octowire.CancellationBody
		if err := decodeBody(r, &in); err != nil {
			fail(http.StatusBadRequest, "BAD_REQUEST", "invalid JSON body")
			return
		}
		if err := s.cancelBooking(b, now, in.Reason); err != nil {
			refuse("cancelled")
			return
		}
	case action == "extend" && r.Method == http.MethodPost:
		var in octowire.ExtendBody
		if err := decodeBody(r, &in); err != nil || (in.ExpirationMinutes != nil && *in.ExpirationMinutes < 1) {
			fail(http.StatusBadRequest, "BAD_REQUEST", "expirationMinutes must be at least 1")
			return
		}
		m := defaultOCTOExpirationMinutes
		if in.ExpirationMinutes != nil {
			m = *in.ExpirationMinutes
		}
		if err := s.extendBooking(cfg, b, now, m); err != nil {
			refuse("extended")
			return
		}
	default:
		fail(http.StatusNotFound, "NOT_FOUND", "no such route")
		return
	}
	writeJSON(w, http.StatusOK, b.octoWire(cfg))
}

// octoWire is the booking in OCTO's shape (caller holds tx.mu).
func (b *simBooking) octoWire(cfg Config) octoBooking {
	utc := func(t time.Time) *string {
		if t.IsZero() {
			return nil
		}
		v := t.UTC().Format(time.RFC3339)
		return &v
	}
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	ref := "SIM-" + strconv.Itoa(b.seq)
	contact := octowire.Contact{Locales: []string{}}
	if b.contact != nil {
		contact = *b.contact
	}
	w := octoBooking{
		ID: uuid.NewSHA1(uuid.NameSpaceOID, []byte(b.req.UUID)).String(), UUID: b.req.UUID,
		ResellerReference: opt(b.req.ResellerReference), SupplierReference: &ref, Status: b.status,
		UTCCreatedAt: *utc(b.created), UTCUpdatedAt: *utc(b.updated), UTCConfirmedAt: utc(b.confirmedAt),
		ProductID: b.req.ProductID, OptionID: b.req.OptionID,
		Cancellable: b.status == "ON_HOLD" || b.status == "CONFIRMED", AvailabilityID: b.req.AvailabilityID,
		Availability: octoBookingAvailability{ID: b.req.AvailabilityID, LocalDateTimeStart: b.start.Format(time.RFC3339),
			LocalDateTimeEnd: b.end.Format(time.RFC3339), OpeningHours: []octowire.OpeningHours{}},
		Contact: contact, Notes: opt(b.req.Notes), DeliveryMethods: []string{"TICKET"}, UnitItems: []octowire.UnitItem{},
	}
	if b.status == "ON_HOLD" {
		w.UTCExpiresAt = utc(b.hold)
	}
	if b.status == "CANCELLED" {
		w.Cancellation = &octowire.Cancellation{Refund: "FULL", Reason: opt(b.cancelReason), UTCCancelledAt: *utc(b.cancelledAt)}
	}
	for i, u := range b.req.UnitItems {
		it := octowire.UnitItem{UUID: b.unitUUIDs[i], ResellerReference: opt(u.ResellerReference),
			SupplierReference: &ref, UnitID: u.UnitID, Status: b.status, Contact: octowire.Contact{Locales: []string{}}}
		if b.status == "CONFIRMED" {
			// Delivery TICKET: one QR code per unit (OCTO's example ticket).
			it.Ticket = &octowire.Ticket{RedemptionMethod: "DIGITAL", DeliveryOptions: []octowire.DeliveryOption{
				{DeliveryFormat: "QRCODE", DeliveryValue: fmt.Sprintf("%s-%d", ref, i+1)}}}
		}
		w.UnitItems = append(w.UnitItems, it)
	}
	if cfg.breaks(BreakStatus) {
		w.Status = "MAYBE"
	}
	return w
}

// Package octo serves every supplier bound to a reseller's channel as an
// OCTO supplier endpoint (octotravel/octo-types, src/openapi.yaml; issue
// 26): under /octo/{supplierId}, GET /supplier, /products, /products/{id},
// POST /availability/calendar, /availability, the bookings (reservation,
// confirm, extend, update, cancel, get, list by reference) and GET
// /capabilities. An OCTO client is configured with the base URL
// https://host/octo/{supplierId} and the reseller principal's key and
// secret as its Bearer token ("<key>:<secret>").
//
// It is a mapping and nothing more: what a reseller may see is the
// channel's bindings (internal/catalog decides, as for the reseller API),
// availability is the reseller API's 5-minute cache
// (internal/availcache.Service.Lookup), and holds and bookings are
// internal/booking's, through the same path as the v1.2 reseller API, so
// a reservation made through OCTO and a hold made through v1.2 are the
// same thing in the catalog, history and notifications. The mapping, field
// by field, is in docs/decisions.md, "Selling through OCTO".
//
// It must not hold booking rules (internal/booking and the supplier's
// system decide), call suppliers' systems itself, or keep state of its own:
// what OCTO adds to a hold or booking (notes, contact, references) is kept
// in the hold's and the booking's ext, which Kafka carries like the rest.
package octo

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/internal/availcache"
	"github.com/switchbackhq/switchback/internal/booking"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogredis"
	"github.com/switchbackhq/switchback/internal/octowire"
	"github.com/switchbackhq/switchback/internal/platform/instrument"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/schemas"
)

// Base is the base path of the OCTO endpoints; a supplier's endpoint is
// Base/{supplierId}.
const Base = "/octo"

// pSupplier is the path parameter of the supplier.
const pSupplier = "supplierId"

// CapabilityPricing is OCTO's pricing capability. Not served yet
// (docs/decisions.md, "Selling through OCTO"): asked for, it is not
// applied, and the Octo-Capabilities answer does not list it, as OCTO
// lets a supplier serve a subset of what was asked.
const CapabilityPricing = "octo/pricing"

// HeaderCapabilities is OCTO's request and response header listing the
// capabilities asked for and those the answer applied.
const HeaderCapabilities = "Octo-Capabilities"

var resellerOnly = []principals.Role{principals.RoleReseller}

// Catalog is what the OCTO endpoints read of the catalog: the reseller
// renderings, visibility applied (*catalogredis.Store implements it).
type Catalog interface {
	AppendSupplier(ctx context.Context, dst []byte, channel, sid string, v catalogredis.SupplierVersion, now time.Time) ([]byte, error)
	AppendProducts(ctx context.Context, dst []byte, channel, sid string, now time.Time) ([]byte, error)
	AppendProduct(ctx context.Context, dst []byte, channel, sid, pid string, now time.Time) ([]byte, error)
	AppendRates(ctx context.Context, dst []byte, channel, sid, pid string, now time.Time) ([]byte, error)
	ChannelPriceSchedule(ctx context.Context, channel, sid, pid, rid string, from, until, now time.Time) (catalog.PriceSchedule, error)
}

// Availability is the reseller API's availability cache
// (*internal/availcache.Service).
type AvailabilityCache interface {
	Lookup(ctx context.Context, reqID, channel, sid, pid, rid string, start, end time.Time) ([]availcache.Rate, bool, error)
	MaxWindow() time.Duration
}

// Bookings is internal/booking's Service: the v1.2 reseller API's holds
// and bookings.
type Bookings interface {
	CreateHold(ctx context.Context, p principals.Principal, reqID string, in schemas.Hold) (schemas.Hold, error)
	HoldRecord(ctx context.Context, channelID, id string) (schemas.HoldRecord, error)
	HoldDetail(ctx context.Context, p principals.Principal, reqID, id string) (schemas.HoldRecord, error)
	ReleaseHold(ctx context.Context, p principals.Principal, reqID, id string) error
	ExtendHold(ctx context.Context, p principals.Principal, reqID, id string, minutes int) (schemas.Hold, error)
	SetHoldExt(ctx context.Context, p principals.Principal, id string, ext map[string]string) (schemas.Hold, error)
	CreateBooking(ctx context.Context, p principals.Principal, reqID string, in schemas.Booking) (booking.Result, error)
	Record(ctx context.Context, channelID, id string) (schemas.BookingRecord, error)
	Booking(ctx context.Context, p principals.Principal, reqID, id string) (booking.Result, error)
	CancelBooking(ctx context.Context, p principals.Principal, reqID, id string) (booking.Result, error)
	UpdateBookingNotes(ctx context.Context, p principals.Principal, reqID, id string, n booking.BookingNotes) (booking.Result, error)
	HoldsByResellerReference(ctx context.Context, channel, ref string) ([]string, error)
	HoldsBySupplierReference(ctx context.Context, channel, ref string) ([]string, error)
}

// Options configures New.
type Options struct {
	Catalog      Catalog           // required
	Availability AvailabilityCache // required
	Bookings     Bookings          // required
	// Clock: default time.Now.
	Clock      func() time.Time
	Registerer prometheus.Registerer
}

// Service is the OCTO endpoints.
type Service struct {
	cat     Catalog
	avail   AvailabilityCache
	book    Bookings
	now     func() time.Time
	metrics *metrics
}

// New returns the service.
func New(opts Options) *Service {
	if opts.Catalog == nil || opts.Availability == nil || opts.Bookings == nil {
		panic("octo.New: Catalog, Availability and Bookings are required")
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	return &Service{cat: opts.Catalog, avail: opts.Availability, book: opts.Bookings, now: opts.Clock, metrics: newMetrics(opts.Registerer)}
}

type metrics struct {
	errors *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{errors: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchback_octo_errors_total",
		Help: "OCTO error answers, by OCTO error name (every OCTO error is HTTP 400, as the standard says: INTERNAL_SERVER_ERROR here is what our APIs answer 5xx).",
	}, []string{"error"})}
	m.errors = instrument.Register(reg, m.errors)
	for _, n := range []string{ErrNameInvalidProductID, ErrNameInvalidOptionID, ErrNameInvalidUnitID, ErrNameInvalidAvailabilityID,
		ErrNameInvalidBookingUUID, ErrNameBadRequest, ErrNameUnprocessableEntity, ErrNameInternalServerError, ErrNameUnauthorized, ErrNameForbidden} {
		m.errors.WithLabelValues(n)
	}
	return m
}

// Register adds the OCTO routes under Base/{supplierId} to s: resellers
// only, their credentials read and their errors written the OCTO way.
// (src/openapi.yaml writes the collection paths with a trailing slash,
// OCTO's documentation and clients without: served without only, the
// router holding one of the two and redirecting nothing.)
func Register(s *httpapi.Server, svc *Service) {
	d := dialect{metrics: svc.metrics}
	s.DialectPrefix(Base+"/", d)
	for _, rt := range Routes() {
		h := svc.handler(rt.Op)
		s.HandleDialect(rt.Method, rt.Path, resellerOnly, d, h)
	}
}

// Route is one OCTO route: method, full path pattern and operation.
type Route struct{ Method, Path, Op string }

// Routes lists the OCTO routes Register adds (the OpenAPI document
// describes the same).
func Routes() []Route {
	const sup = Base + "/{" + pSupplier + "}"
	one := []Route{
		{http.MethodGet, sup + "/supplier", "supplier"},
		{http.MethodGet, sup + "/capabilities", "capabilities"},
		{http.MethodGet, sup + "/products", "products"},
		{http.MethodGet, sup + "/products/{id}", "product"},
		{http.MethodPost, sup + "/availability/calendar", "calendar"},
		{http.MethodPost, sup + "/availability", "availability"},
		{http.MethodPost, sup + "/bookings", "reserve"},
		{http.MethodGet, sup + "/bookings", "bookings"},
		{http.MethodGet, sup + "/bookings/{uuid}", "booking"},
		{http.MethodPatch, sup + "/bookings/{uuid}", "update"},
		{http.MethodPost, sup + "/bookings/{uuid}/confirm", "confirm"},
		{http.MethodPost, sup + "/bookings/{uuid}/extend", "extend"},
		{http.MethodPost, sup + "/bookings/{uuid}/cancel", "cancel"},
	}
	return one
}

func (s *Service) handler(op string) httpapi.HandlerFunc {
	switch op {
	case "supplier":
		return s.supplier
	case "capabilities":
		return s.capabilities
	case "products":
		return s.products
	case "product":
		return s.product
	case "calendar":
		return s.calendar
	case "availability":
		return s.availability
	case "reserve":
		return s.reserve
	case "bookings":
		return s.bookings
	case "booking":
		return s.booking
	case "update":
		return s.update
	case "confirm":
		return s.confirm
	case "extend":
		return s.extend
	case "cancel":
		return s.cancel
	}
	panic("octo: no handler for " + op)
}

// caps is the capabilities a request asked for that Switchback serves
// and applied: none yet (core OCTO only; CapabilityPricing is not served).
type caps struct{}

// requested reads Octo-Capabilities (a comma-separated list of
// capability ids): every capability asked for is one Switchback does not
// serve yet, so none is applied.
func requested(*fasthttp.RequestCtx) caps { return caps{} }

// header is the Octo-Capabilities answer: the capabilities applied.
func (caps) header() string { return "" }

// writeJSON answers 200 with v and the Octo-Capabilities header OCTO
// requires on every success.
func writeJSON(r *httpapi.Request, c caps, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return internal(err)
	}
	resp := &r.Ctx.Response
	resp.SetStatusCode(http.StatusOK)
	resp.Header.SetContentType("application/json")
	resp.Header.Set(HeaderCapabilities, c.header())
	resp.SetBody(b)
	return nil
}

// decode reads a JSON body into v: one JSON value, unknown fields ignored
// (an OCTO client sends what its capabilities define), wrong types and
// malformed JSON BAD_REQUEST.
func decode(r *httpapi.Request, v any) error {
	body := r.Ctx.PostBody()
	if len(strings.TrimSpace(string(body))) == 0 {
		return badRequest("The request body is required (JSON)")
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if asTypeError(err, &te) && te.Field != "" {
			return badRequest(te.Field + " has the wrong type")
		}
		return badRequest("The request body is not valid JSON")
	}
	if dec.More() {
		return badRequest("The request body has data after its JSON value")
	}
	return nil
}

func asTypeError(err error, te **json.UnmarshalTypeError) bool {
	t, ok := err.(*json.UnmarshalTypeError)
	if ok {
		*te = t
	}
	return ok
}

// capabilities answers GET /capabilities: the capabilities this endpoint
// serves besides core OCTO (none yet).
func (s *Service) capabilities(r *httpapi.Request) error {
	if _, err := s.visibleSupplier(r); err != nil {
		return err
	}
	return writeJSON(r, requested(r.Ctx), []octowire.Capability{})
}

// Package bookingsim is a simulated operator booking system (spec doc 3,
// "Booking system", interface v2, with the "not shown" endpoints filled the
// OCTO way as in docs/decisions.md), or, with Config.Dialect "octo", the
// same booking system spoken as the public OCTO standard (octo.go: one
// endpoint per supplier, /supplier, /products, /availability, /bookings).
// Both dialects serve one inventory and one state machine: generated suppliers,
// products of both availability types, options and availabilities, and
// bookings and orders with doc 3's state machine (bookings.go). Bearer
// auth, configurable latency, error rate, change rate, deterministic
// failures of chosen calls (InjectFault, faults.go), and data that breaks
// doc 3's rules on request (Config.Break). Tests, benchmarks and the demo
// use it; it is not production code and shares no code with the client
// (ingest/bookingsystem), so each checks the other. It lives under
// internal/ rather than bench/ because demo mode (cmd/switchback/internal/demo)
// ships it in the binary, and no non-test code may import bench/.
//
// Inventory: suppliers "S1".."Sn"; products "<S>-P1".."<S>-Pm": odd
// numbers START_TIME, even numbers OPENING_HOURS; every product whose
// number is 3 mod 4 has instantConfirmation false (its confirmed bookings
// are PENDING until Decide). Options "<P>-O1".., units "adult" and
// "child". START_TIME options have slots at SlotHours of every local day,
// capacity a hash of (seed, option, slot) that moves every ChangeEvery for
// a fraction ChangeRate of the slots; status CLOSED for a few slots,
// SOLD_OUT at 0 vacancies, LIMITED at a quarter of MaxCapacity or less,
// AVAILABLE above. OPENING_HOURS options are FREESALE for each range of
// OpeningRanges of every day (in OCTO, optionally one availability per day
// listing them as openingHours: OCTOOpeningHoursByDay). In the OCTO dialect supplier S<n> is served
// under the path prefix /S<n> (its OCTO endpoint is <base>/S<n>).
package bookingsim

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchbackhq/switchback/internal/octowire"
)

// Breakages Config.Break can ask for; each spoils one item of the answers
// it applies to (the others stay valid). Names are the client's rules.
const (
	BreakIDLength        = "id_length"                  // products and availability: one item with a 1025-character id
	BreakAvailabilityTyp = "availability_type"          // products: one product of type "SOMETIMES"
	BreakStartTimeFree   = "start_time_freesale"        // START_TIME availability: the first is FREESALE
	BreakOpeningNotFree  = "opening_hours_not_freesale" // OPENING_HOURS availability: the first is AVAILABLE
	BreakVacancies       = "vacancies_negative"         // START_TIME availability: the first has -1 vacancies
	BreakStatus          = "status"                     // availability: the first has status "MAYBE"; bookings answer status "MAYBE"
	BreakContiguous      = "contiguous_range"           // OPENING_HOURS availability: the first range is split in two touching ones
	BreakTimeRange       = "time_range"                 // availability: the first ends before it starts
	BreakDuplicateID     = "duplicate_id"               // availability: the first is repeated
	BreakFractions       = "fractions"                  // availability: times carry .123456 seconds (valid: dropped by readers)
)

// Dialects of Config.Dialect (the client's names, spelled again: the
// simulator shares no code with the client).
const (
	DialectV2   = "v2"   // spec doc 3, paths under /suppliers/{supplierId}
	DialectOCTO = "octo" // the OCTO standard, one endpoint per supplier
)

// Range is an opening range [From, To) in hours of the local day.
type Range struct{ From, To int }

// Unit is a unit type of every option (OCTO: id and type). Its
// restrictions (ages) follow its type (unitRestrictionsOf).
type Unit struct{ ID, Type string }

// OCTOExampleUnits are OCTO's example units (octotravel/octo-types
// src/openapi.yaml, the product examples), for Config.Units. The
// example's child repeats the adult's id in the product (its unit items
// and prices name child_797e…): it is given that id here.
var OCTOExampleUnits = []Unit{
	{"adult_697e3ce8-1860-4cbf-80ad-95857df1f640", "ADULT"},
	{"child_797e3ce8-1860-4cbf-80ad-95857df1f640", "CHILD"},
	{"infant_897e3ce8-1860-4cbf-80ad-95857df1f640", "INFANT"},
}

// Config configures a Server. Zero values take the defaults.
type Config struct {
	// Dialect the server speaks: DialectV2 (default) or DialectOCTO.
	Dialect string
	// Suppliers is the number of suppliers. Default 2.
	Suppliers int
	// ProductsPerSupplier. Default 4.
	ProductsPerSupplier int
	// OptionsPerProduct. Default 2.
	OptionsPerProduct int
	// Units of every option. Default "adult" (ADULT) and "child" (CHILD);
	// OCTOExampleUnits are OCTO's example ones. Changed with Update, the
	// next answers and bookings take the new ones (a booking system that
	// renamed its units).
	Units []Unit
	// MinUnits and MaxUnits are every option's restrictions (OCTO's
	// minUnits and maxUnits: units per booking; 0 is none). A booking of
	// fewer or more units is refused: 400 UNPROCESSABLE_ENTITY. Default:
	// none in the v2 dialect, OCTO's example (0 and 9) in the OCTO one.
	MinUnits, MaxUnits int
	// CutoffHours is every option's cancellation cutoff (OCTO's
	// cancellationCutoffAmount in hours). Default 1, OCTO's example.
	CutoffHours int
	// OCTOClosedDays (DialectOCTO): OPENING_HOURS options are CLOSED on
	// about one day in nine (a stop-sell), which OCTO allows and doc 3
	// does not (its OPENING_HOURS products MUST be FREESALE).
	OCTOClosedDays bool
	// OCTOOptionIDs (DialectOCTO) names the first option of every product
	// DEFAULT, as OCTO's examples (and many OCTO systems) do, so that
	// every product has an option of that id; the others stay <P>-O<n>.
	OCTOOptionIDs bool
	// TimeZone of every product (tz name). Default "UTC".
	TimeZone string
	// UTCTimes sends availability times in UTC ("...Z") instead of the
	// product's local offset: a booking system that does not keep local
	// times (ids stay the local start times).
	UTCTimes bool
	// SlotHours of START_TIME options (local). Default 9, 13, 17.
	SlotHours []int
	// SlotLength of a START_TIME slot. Default 2 h.
	SlotLength time.Duration
	// OpeningRanges of OPENING_HOURS options. Default 9–12 and 13–18.
	OpeningRanges []Range
	// OCTOOpeningHoursByDay (DialectOCTO): an OPENING_HOURS option has one
	// availability per day (allDay, local midnight to midnight, its id the
	// day's start) with every range of OpeningRanges in its openingHours,
	// as OCTO suppliers send them. Otherwise one per range, each with its
	// own range as openingHours (doc 3's shape).
	OCTOOpeningHoursByDay bool
	// MaxCapacity of a START_TIME slot. Default 20.
	MaxCapacity int
	// Latency added to every answer.
	Latency time.Duration
	// ErrorRate is the fraction of calls answered ErrorStatus (default 500).
	ErrorRate   float64
	ErrorStatus int
	// ChangeRate is the fraction of slots whose capacity changes every
	// ChangeEvery (default 1 min).
	ChangeRate  float64
	ChangeEvery time.Duration
	// APIKey, when set, is required as "Authorization: Bearer <APIKey>"
	// (401 otherwise). ForbiddenKey authenticates but is refused (403).
	APIKey, ForbiddenKey string
	// Endpoint of the suppliers in GET /suppliers. Default: the request's
	// scheme and host (the simulator serves every supplier itself).
	Endpoint string
	// MaxExtendMinutes caps an order extension (doc 3 rule 7: the booking
	// system MAY extend by another length). 0: as asked.
	MaxExtendMinutes int
	// RejectRepeatedConfirm answers 400 to a confirm of an order or
	// booking that is already CONFIRMED or PENDING, as a booking system
	// may (doc 3 lists no CONFIRMED → CONFIRMED move). Default: the
	// current state (a retry after a lost answer must not fail).
	RejectRepeatedConfirm bool
	// Break lists the rule-breaking data to return (Break* constants).
	Break []string
	// EchoSecretsInErrors puts the request's Authorization header into
	// error bodies: a hostile booking system, to prove the client never
	// passes remote bodies on.
	EchoSecretsInErrors bool
	// Clock. Default time.Now.
	Clock func() time.Time
	// Seed of the generated inventory.
	Seed uint64
}

// Server is the simulated booking system; it is an http.Handler.
type Server struct {
	mu    sync.RWMutex
	cfg   Config
	calls atomic.Int64
	rndMu sync.Mutex
	rnd   *rand.Rand
	tx    txState
	// faults armed by InjectFault (faults.go).
	faults faults
}

// New returns a server.
func New(cfg Config) *Server {
	if cfg.Suppliers <= 0 {
		cfg.Suppliers = 2
	}
	if cfg.ProductsPerSupplier <= 0 {
		cfg.ProductsPerSupplier = 4
	}
	if cfg.OptionsPerProduct <= 0 {
		cfg.OptionsPerProduct = 2
	}
	if len(cfg.Units) == 0 {
		cfg.Units = []Unit{{"adult", "ADULT"}, {"child", "CHILD"}}
	}
	if cfg.MaxUnits == 0 && cfg.Dialect == DialectOCTO {
		cfg.MaxUnits = 9
	}
	if cfg.CutoffHours == 0 {
		cfg.CutoffHours = 1
	}
	if cfg.TimeZone == "" {
		cfg.TimeZone = "UTC"
	}
	if len(cfg.SlotHours) == 0 {
		cfg.SlotHours = []int{9, 13, 17}
	}
	if cfg.SlotLength <= 0 {
		cfg.SlotLength = 2 * time.Hour
	}
	if len(cfg.OpeningRanges) == 0 {
		cfg.OpeningRanges = []Range{{9, 12}, {13, 18}}
	}
	if cfg.MaxCapacity <= 0 {
		cfg.MaxCapacity = 20
	}
	if cfg.ErrorStatus == 0 {
		cfg.ErrorStatus = http.StatusInternalServerError
	}
	if cfg.ChangeEvery <= 0 {
		cfg.ChangeEvery = time.Minute
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	switch cfg.Dialect {
	case "":
		cfg.Dialect = DialectV2
	case DialectV2, DialectOCTO:
	default:
		panic("bookingsim.New: unknown Config.Dialect " + cfg.Dialect)
	}
	s := &Server{cfg: cfg, rnd: rand.New(rand.NewPCG(cfg.Seed, 11))}
	s.tx.bookings, s.tx.orders, s.tx.taken = map[string]*simBooking{}, map[string]*simOrder{}, map[string]int{}
	return s
}

// Calls is the number of requests answered (any route, any status).
func (s *Server) Calls() int64 { return s.calls.Load() }

// Update changes the configuration at run time (latency, error rate…).
func (s *Server) Update(f func(*Config)) {
	s.mu.Lock()
	f(&s.cfg)
	s.mu.Unlock()
}

func (s *Server) config() Config {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cfg
}

func (cfg Config) breaks(b string) bool {
	for _, x := range cfg.Break {
		if x == b {
			return true
		}
	}
	return false
}

// Wire shapes (doc 3; nested objects with OCTO names). A product's
// options and units: doc 3 counts their fields without showing them; they
// take OCTO's names and shapes (restrictions, cancellation cutoff;
// pricingFrom with the octo/pricing capability), in both dialects:
// internal/octowire's Option, Unit and Pricing.
type (
	wireSupplier struct {
		ID       string            `json:"id"`
		Name     string            `json:"name"`
		Endpoint string            `json:"endpoint"`
		Contact  map[string]string `json:"contact"`
	}
	wireProduct struct {
		ID                  string            `json:"id"`
		InternalName        string            `json:"internalName"`
		Reference           string            `json:"reference"`
		Locale              string            `json:"locale"`
		TimeZone            string            `json:"timeZone"`
		InstantConfirmation bool              `json:"instantConfirmation"`
		InstantDelivery     bool              `json:"instantDelivery"`
		AvailabilityType    string            `json:"availabilityType"`
		DeliveryFormats     []string          `json:"deliveryFormats"`
		DeliveryMethods     []string          `json:"deliveryMethods"`
		RedemptionMethod    string            `json:"redemptionMethod"`
		Capabilities        []any             `json:"capabilities"`
		Options             []octowire.Option `json:"options"`
	}
	wireAvailability struct {
		ID                 string `json:"id"`
		OptionID           string `json:"optionId"`
		LocalDateTimeStart string `json:"localDateTimeStart"`
		LocalDateTimeEnd   string `json:"localDateTimeEnd"`
		Status             string `json:"status"`
		Vacancies          *int   `json:"vacancies,omitempty"`
		Available          *bool  `json:"available,omitempty"`
		// What only the OCTO shape shows (octo.go), carried along by
		// spoil's copies and never put on the v2 wire.
		octo octoExtras
	}
)

type product struct {
	supplierID string
	wire       wireProduct
}

// product returns the generated product pid of supplier sid, if any.
func (cfg Config) product(sid, pid string) (product, bool) {
	if _, ok := cfg.supplierNumber(sid); !ok || !strings.HasPrefix(pid, sid+"-P") {
		return product{}, false
	}
	i, err := strconv.Atoi(strings.TrimPrefix(pid, sid+"-P"))
	if err != nil || i < 1 || i > cfg.ProductsPerSupplier || strconv.Itoa(i) != strings.TrimPrefix(pid, sid+"-P") {
		return product{}, false
	}
	typ := "START_TIME"
	if i%2 == 0 {
		typ = "OPENING_HOURS"
	}
	p := wireProduct{
		ID: pid, InternalName: "Product " + pid, Reference: pid, Locale: "en", TimeZone: cfg.TimeZone,
		InstantConfirmation: i%4 != 3, InstantDelivery: true, AvailabilityType: typ,
		DeliveryFormats: []string{"QR_CODE"}, DeliveryMethods: []string{"TICKET", "VOUCHER"},
		RedemptionMethod: "DIGITAL", Capabilities: []any{},
	}
	if cfg.Dialect == DialectOCTO {
		// OCTO's own values (its example product): its delivery formats
		// are PDF_URL, QRCODE, CODE128, PKPASS_URL and AZTECCODE.
		p.Locale, p.Reference = "en-GB", "LEYE-GA-"+pid
		p.DeliveryFormats, p.DeliveryMethods = []string{"QRCODE"}, []string{"TICKET"}
	}
	units := make([]octowire.Unit, 0, len(cfg.Units))
	for _, u := range cfg.Units {
		units = append(units, octowire.Unit{ID: u.ID, InternalName: unitName(u), Type: u.Type, Restrictions: unitRestrictionsOf(cfg, u),
			RequiredContactFields: []string{"firstName"}})
	}
	var minUnits, maxUnits *int
	if cfg.MinUnits > 0 {
		minUnits = &cfg.MinUnits
	} else {
		zero := 0
		minUnits = &zero
	}
	if cfg.MaxUnits > 0 {
		maxUnits = &cfg.MaxUnits
	}
	cutoff := "1 hour"
	if cfg.CutoffHours != 1 {
		cutoff = fmt.Sprintf("%d hours", cfg.CutoffHours)
	}
	for o := 1; o <= cfg.OptionsPerProduct; o++ {
		id := fmt.Sprintf("%s-O%d", pid, o)
		if o == 1 && cfg.Dialect == DialectOCTO && cfg.OCTOOptionIDs {
			id = "DEFAULT"
		}
		starts := []string{"00:00"}
		if typ == "START_TIME" {
			starts = starts[:0]
			for _, h := range cfg.SlotHours {
				starts = append(starts, fmt.Sprintf("%02d:00", h))
			}
		}
		p.Options = append(p.Options, octowire.Option{
			ID: id, Default: o == 1, InternalName: fmt.Sprintf("Option %d", o), AvailabilityLocalStartTimes: starts,
			CancellationCutoff: cutoff, CancellationCutoffAmount: cfg.CutoffHours, CancellationCutoffUnit: "hour",
			RequiredContactFields: []string{"firstName"}, Restrictions: octowire.OptionRestrictions{MinUnits: minUnits, MaxUnits: maxUnits},
			Units: units,
		})
	}
	return product{supplierID: sid, wire: p}, true
}

// unitName is a unit's internalName: OCTO's example names for its types.
func unitName(u Unit) string {
	if u.Type == "" {
		return u.ID
	}
	t := strings.ToLower(u.Type)
	return strings.ToUpper(t[:1]) + t[1:]
}

// unitRestrictionsOf are the restrictions of a unit: OCTO's example ages
// of its type (ADULT 18–99, CHILD 3–12, INFANT 0–3 accompanied by the
// first adult unit), one to ten of it per booking, one person each.
func unitRestrictionsOf(cfg Config, u Unit) octowire.UnitRestrictions {
	one, ten := 1, 10
	r := octowire.UnitRestrictions{MinAge: 0, MaxAge: 99, MinQuantity: &one, MaxQuantity: &ten, PaxCount: 1, AccompaniedBy: []string{}}
	switch u.Type {
	case "ADULT":
		r.MinAge, r.MaxAge = 18, 99
	case "CHILD":
		r.MinAge, r.MaxAge = 3, 12
	case "INFANT":
		r.MinAge, r.MaxAge = 0, 3
		for _, a := range cfg.Units {
			if a.Type == "ADULT" {
				r.AccompaniedBy = []string{a.ID}
				break
			}
		}
	}
	return r
}

// withPricing is p with the octo/pricing capability's fields: every unit's
// pricingFrom and the product's currencies. The OCTO dialect prices its
// example units as OCTO's example does (EUR and USD; child and infant
// units of other ids take the child's and infant's by type); the v2
// dialect prices each unit at its retailPrice of the month of now, in EUR.
func withPricing(cfg Config, p wireProduct, now time.Time) wireProduct {
	p.Options = append([]octowire.Option(nil), p.Options...)
	for i := range p.Options {
		o := &p.Options[i]
		o.Units = append([]octowire.Unit(nil), o.Units...)
		for j := range o.Units {
			u := &o.Units[j]
			if cfg.Dialect == DialectOCTO {
				pf := octoExamplePricing(u.Type)
				u.PricingFrom = &pf
				continue
			}
			retail := retailPrice(cfg, o.ID, u.ID, now)
			net := retail * 8 / 10
			u.PricingFrom = &[]octowire.Pricing{{Original: retail, Retail: retail, Net: &net, Currency: "EUR", CurrencyPrecision: 2, IncludedTaxes: []octowire.Tax{}}}
		}
	}
	return p
}

// octoExamplePricing is the pricingFrom of OCTO's example units (its
// "Products with octo/pricng (pricing per unit)" example, values as
// given: the adult's net is 8000 there).
func octoExamplePricing(typ string) []octowire.Pricing {
	n := func(v int64) *int64 { return &v }
	two := func(original, retail, net int64) []octowire.Pricing {
		return []octowire.Pricing{
			{Original: original, Retail: retail, Net: n(net), Currency: "EUR", CurrencyPrecision: 2, IncludedTaxes: []octowire.Tax{}},
			{Original: original, Retail: retail, Net: n(net), Currency: "USD", CurrencyPrecision: 2, IncludedTaxes: []octowire.Tax{}},
		}
	}
	switch typ {
	case "CHILD":
		return two(500, 500, 400)
	case "INFANT":
		return two(0, 0, 0)
	}
	return two(1000, 1000, 8000)
}

func (cfg Config) supplierNumber(sid string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(sid, "S"))
	if !strings.HasPrefix(sid, "S") || err != nil || n < 1 || n > cfg.Suppliers || "S"+strconv.Itoa(n) != sid {
		return 0, false
	}
	return n, true
}

// option finds an option of a product.
func (p product) option(oid string) (octowire.Option, bool) {
	for _, o := range p.wire.Options {
		if o.ID == oid {
			return o, true
		}
	}
	return octowire.Option{}, false
}

// slot is one generated availability before it is put on the wire.
type slot struct {
	id         string
	start, end time.Time
	status     string
	vacancies  *int
	capacity   *int    // START_TIME: the slot's capacity before holds
	ranges     []Range // an OCTO day's opening ranges (OCTOOpeningHoursByDay)
}

// slots generates the availabilities of an option whose local start date
// is in [from, to), with the inventory taken by holds and bookings.
func (s *Server) slots(cfg Config, p product, oid string, from, to time.Time, now time.Time) []slot {
	loc, err := time.LoadLocation(cfg.TimeZone)
	if err != nil {
		loc = time.UTC
	}
	var out []slot
	epoch := now.UnixNano() / int64(cfg.ChangeEvery)
	for d := from; d.Before(to); d = d.AddDate(0, 0, 1) {
		day := time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, loc)
		if p.wire.AvailabilityType == "OPENING_HOURS" {
			// Doc 3: FREESALE on every opening range. OCTO allows any
			// status there (OCTOClosedDays: a stop-sell now and then).
			status, vacancies := "FREESALE", (*int)(nil)
			if cfg.Dialect == DialectOCTO && cfg.OCTOClosedDays && hash(cfg.Seed, oid, day.Unix(), -2)%9 == 0 {
				zero := 0
				status, vacancies = "CLOSED", &zero
			}
			if cfg.Dialect == DialectOCTO && cfg.OCTOOpeningHoursByDay {
				out = append(out, slot{id: day.Format(time.RFC3339), start: day, end: day.AddDate(0, 0, 1), status: status, vacancies: vacancies, ranges: cfg.OpeningRanges})
				continue
			}
			for _, r := range cfg.OpeningRanges {
				st := day.Add(time.Duration(r.From) * time.Hour)
				out = append(out, slot{id: st.Format(time.RFC3339), start: st, end: day.Add(time.Duration(r.To) * time.Hour), status: status, vacancies: vacancies})
			}
			continue
		}
		for _, h := range cfg.SlotHours {
			st := day.Add(time.Duration(h) * time.Hour)
			id := st.Format(time.RFC3339)
			capacity := int(hash(cfg.Seed, oid, st.Unix(), 0) % uint64(cfg.MaxCapacity+1))
			if cfg.ChangeRate > 0 {
				ch := hash(cfg.Seed, oid, st.Unix(), epoch)
				if float64(ch%10000)/10000 < cfg.ChangeRate {
					capacity = int((ch >> 16) % uint64(cfg.MaxCapacity+1))
				}
			}
			c := capacity
			v := max(0, capacity-s.takenOf(availKey(p.supplierID, oid, id)))
			status := "AVAILABLE"
			switch {
			case hash(cfg.Seed, oid, st.Unix(), -1)%13 == 0:
				status = "CLOSED"
			case v == 0:
				status = "SOLD_OUT"
			case v <= cfg.MaxCapacity/4:
				status = "LIMITED"
			}
			out = append(out, slot{id: id, start: st, end: st.Add(cfg.SlotLength), status: status, vacancies: &v, capacity: &c})
		}
	}
	return out
}

func hash(seed uint64, key string, t, epoch int64) uint64 {
	h := fnv.New64a()
	var b [24]byte
	binary.LittleEndian.PutUint64(b[0:], seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(t))
	binary.LittleEndian.PutUint64(b[16:], uint64(epoch))
	_, _ = h.Write(b[:])
	_, _ = h.Write([]byte(key))
	return h.Sum64()
}

func (sl slot) wire(cfg Config, oid string) wireAvailability {
	format := func(t time.Time) string { return t.Format(time.RFC3339) }
	if cfg.breaks(BreakFractions) {
		format = func(t time.Time) string { return t.Format("2006-01-02T15:04:05") + ".123456" + t.Format("Z07:00") }
	}
	if local := format; cfg.UTCTimes {
		format = func(t time.Time) string { return local(t.UTC()) }
	}
	return wireAvailability{ID: sl.id, OptionID: oid, LocalDateTimeStart: format(sl.start),
		LocalDateTimeEnd: format(sl.end), Status: sl.status, Vacancies: sl.vacancies, octo: sl.octoExtras()}
}

// spoil applies the availability breakages of cfg to the first item.
func spoil(cfg Config, typ string, as []wireAvailability, sls []slot) []wireAvailability {
	if len(as) == 0 {
		return as
	}
	a := &as[0]
	startTime := typ == "START_TIME"
	switch {
	case cfg.breaks(BreakStartTimeFree) && startTime:
		a.Status, a.Vacancies = "FREESALE", nil
	case cfg.breaks(BreakOpeningNotFree) && !startTime:
		a.Status = "AVAILABLE"
	case cfg.breaks(BreakVacancies) && startTime:
		v := -1
		a.Vacancies = &v
	case cfg.breaks(BreakStatus):
		a.Status = "MAYBE"
	case cfg.breaks(BreakTimeRange):
		a.LocalDateTimeStart, a.LocalDateTimeEnd = a.LocalDateTimeEnd, a.LocalDateTimeStart
	case cfg.breaks(BreakIDLength):
		a.ID = strings.Repeat("x", 1025)
	case cfg.breaks(BreakDuplicateID):
		as = append(as, *a)
	case cfg.breaks(BreakContiguous) && !startTime:
		mid := sls[0].start.Add(sls[0].end.Sub(sls[0].start) / 2)
		second := *a
		a.LocalDateTimeEnd = mid.Format(time.RFC3339)
		second.ID, second.LocalDateTimeStart = mid.Format(time.RFC3339), mid.Format(time.RFC3339)
		as = append(as[:1], append([]wireAvailability{second}, as[1:]...)...)
	}
	return as
}

type errorBody struct {
	Error        string `json:"error"`
	ErrorMessage string `json:"errorMessage"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	cfg := s.config()
	auth := r.Header.Get("Authorization")
	fail := func(status int, code, msg string) {
		if cfg.EchoSecretsInErrors {
			msg += " (you sent " + auth + ")"
		}
		writeJSON(w, status, errorBody{Error: code, ErrorMessage: msg})
	}
	if cfg.Latency > 0 {
		select {
		case <-time.After(cfg.Latency):
		case <-r.Context().Done():
			return
		}
	}
	if cfg.APIKey != "" {
		switch auth {
		case "Bearer " + cfg.APIKey:
		case "Bearer " + cfg.ForbiddenKey:
			if cfg.ForbiddenKey != "" {
				fail(http.StatusForbidden, "FORBIDDEN", "insufficient permissions")
				return
			}
			fallthrough
		default:
			fail(http.StatusUnauthorized, "UNAUTHORIZED", "missing or invalid Authorization header")
			return
		}
	}
	if cfg.ErrorRate > 0 {
		s.rndMu.Lock()
		x := s.rnd.Float64()
		s.rndMu.Unlock()
		if x < cfg.ErrorRate {
			fail(cfg.ErrorStatus, "INTERNAL_SERVER_ERROR", "simulated failure")
			return
		}
	}
	if f, ok := s.fault(r); ok {
		if f.Lost || f.Delay > 0 {
			// Served first: the change is made whatever the caller learns.
			h := &held{}
			s.serve(h, r, cfg, func(status int, code, msg string) {
				writeJSON(h, status, errorBody{Error: code, ErrorMessage: msg})
			})
			select {
			case <-time.After(f.Delay):
			case <-r.Context().Done():
				return
			}
			if f.Status == 0 {
				h.send(w)
				return
			}
		}
		fail(f.Status, "INJECTED_FAULT", "injected fault")
		return
	}
	s.serve(w, r, cfg, fail)
}

// serve routes a request of either dialect.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, cfg Config, fail func(int, string, string)) {
	if cfg.Dialect == DialectOCTO {
		s.serveOCTO(w, r, cfg, fail)
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) == 1 && parts[0] == "suppliers" && r.Method == http.MethodGet {
		s.serveSuppliers(w, r, cfg)
		return
	}
	if len(parts) < 3 || parts[0] != "suppliers" {
		fail(http.StatusNotFound, "NOT_FOUND", "no such route")
		return
	}
	sid := parts[1]
	if _, ok := cfg.supplierNumber(sid); !ok {
		fail(http.StatusNotFound, "INVALID_SUPPLIER_ID", "unknown supplier")
		return
	}
	rest := parts[2:]
	switch {
	case len(rest) == 1 && rest[0] == "products" && r.Method == http.MethodGet:
		s.serveProducts(w, r, cfg, sid)
	case len(rest) == 1 && rest[0] == "availability" && r.Method == http.MethodGet:
		s.serveAvailability(w, r, cfg, sid, fail)
	case len(rest) == 1 && rest[0] == "availability" && r.Method == http.MethodPost:
		s.serveCheck(w, r, cfg, sid, fail)
	case len(rest) == 3 && rest[0] == "products" && rest[2] == "pricing" && r.Method == http.MethodGet:
		s.servePricing(w, r, cfg, sid, rest[1], fail)
	case rest[0] == "bookings" || rest[0] == "orders":
		s.serveTx(w, r, cfg, sid, rest, fail)
	default:
		fail(http.StatusNotFound, "NOT_FOUND", "no such route")
	}
}

func (s *Server) serveSuppliers(w http.ResponseWriter, r *http.Request, cfg Config) {
	ep := cfg.Endpoint
	if ep == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		ep = scheme + "://" + r.Host
	}
	out := []wireSupplier{}
	for i := 1; i <= cfg.Suppliers; i++ {
		out = append(out, wireSupplier{ID: "S" + strconv.Itoa(i), Name: fmt.Sprintf("Supplier %d", i), Endpoint: ep,
			Contact: map[string]string{"website": "https://example.com", "email": "ops@example.com"}})
	}
	writeJSON(w, http.StatusOK, out)
}

// serveProducts is GET /suppliers/{s}/products; with "octo/pricing" in
// X-Capabilities the units carry their pricingFrom (OCTO's capability,
// doc 3's header).
func (s *Server) serveProducts(w http.ResponseWriter, r *http.Request, cfg Config, sid string) {
	ps := productList(cfg, sid)
	if hasCapability(r.Header.Get("X-Capabilities"), "octo/pricing") {
		for i := range ps {
			ps[i] = withPricing(cfg, ps[i], cfg.Clock())
		}
	}
	writeJSON(w, http.StatusOK, ps)
}

// hasCapability reports whether the comma-delimited list names c.
func hasCapability(list, c string) bool {
	for _, x := range strings.Split(list, ",") {
		if strings.TrimSpace(x) == c {
			return true
		}
	}
	return false
}

// productList is the products of supplier sid, with cfg's product
// breakages (either dialect).
func productList(cfg Config, sid string) []wireProduct {
	out := []wireProduct{}
	for i := 1; i <= cfg.ProductsPerSupplier; i++ {
		p, _ := cfg.product(sid, fmt.Sprintf("%s-P%d", sid, i))
		out = append(out, p.wire)
	}
	if cfg.breaks(BreakIDLength) {
		p, _ := cfg.product(sid, sid+"-P1")
		p.wire.ID = strings.Repeat("p", 1025)
		out = append(out, p.wire)
	}
	if cfg.breaks(BreakAvailabilityTyp) {
		p, _ := cfg.product(sid, sid+"-P1")
		p.wire.ID, p.wire.AvailabilityType = sid+"-PX", "SOMETIMES"
		out = append(out, p.wire)
	}
	return out
}

// parseDate reads a local date: YYYY-MM-DD, or an RFC 3339 time whose date
// is taken (doc 3 calls the parameters RFC 3339).
func parseDate(v string) (time.Time, error) {
	if len(v) > 10 {
		if _, err := time.Parse(time.RFC3339, v); err != nil {
			return time.Time{}, err
		}
		v = v[:10]
	}
	return time.Parse(time.DateOnly, v)
}

func (s *Server) serveAvailability(w http.ResponseWriter, r *http.Request, cfg Config, sid string, fail func(int, string, string)) {
	q := r.URL.Query()
	p, ok := cfg.product(sid, q.Get("productId"))
	if !ok {
		fail(http.StatusBadRequest, "INVALID_PRODUCT_ID", "unknown productId")
		return
	}
	oid := q.Get("optionId")
	if _, ok := p.option(oid); !ok {
		fail(http.StatusBadRequest, "INVALID_OPTION_ID", "unknown optionId")
		return
	}
	from, err1 := parseDate(q.Get("localDateStart"))
	to, err2 := parseDate(q.Get("localDateEnd"))
	if err1 != nil || err2 != nil || !from.Before(to) || to.Sub(from) > 366*24*time.Hour {
		fail(http.StatusBadRequest, "BAD_REQUEST", "localDateStart and localDateEnd: dates, start before end, at most 366 days")
		return
	}
	sls := s.slots(cfg, p, oid, from, to, cfg.Clock())
	out := make([]wireAvailability, 0, len(sls))
	for _, sl := range sls {
		out = append(out, sl.wire(cfg, oid))
	}
	writeJSON(w, http.StatusOK, spoil(cfg, p.wire.AvailabilityType, out, sls))
}

type checkBody struct {
	ProductID       string   `json:"productId"`
	OptionID        string   `json:"optionId"`
	AvailabilityIDs []string `json:"availabilityIds"`
	Units           []struct {
		UnitID   string `json:"unitId"`
		Quantity int    `json:"quantity"`
	} `json:"units"`
}

// serveCheck is POST availability (doc 3 rule 3): the listed
// availabilities, each with available true when the units fit.
func (s *Server) serveCheck(w http.ResponseWriter, r *http.Request, cfg Config, sid string, fail func(int, string, string)) {
	var in checkBody
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
	if !ok || len(in.AvailabilityIDs) == 0 || len(in.Units) == 0 {
		fail(http.StatusBadRequest, "BAD_REQUEST", "optionId, availabilityIds and units are required")
		return
	}
	qty := 0
	for _, u := range in.Units {
		if !hasUnit(o, u.UnitID) || u.Quantity < 1 {
			fail(http.StatusBadRequest, "INVALID_UNIT_ID", "unknown unitId or quantity below 1")
			return
		}
		qty += u.Quantity
	}
	out := []wireAvailability{}
	for _, id := range in.AvailabilityIDs {
		sl, ok := s.findSlot(cfg, p, in.OptionID, id)
		if !ok {
			fail(http.StatusBadRequest, "INVALID_AVAILABILITY_ID", "unknown availabilityId")
			return
		}
		a := sl.wire(cfg, in.OptionID)
		fits := sl.fits(qty)
		a.Available = &fits
		out = append(out, a)
	}
	writeJSON(w, http.StatusOK, out)
}

func (sl slot) fits(qty int) bool {
	switch sl.status {
	case "FREESALE":
		return true
	case "AVAILABLE", "LIMITED":
		return sl.vacancies != nil && *sl.vacancies >= qty
	}
	return false
}

func hasUnit(o octowire.Option, id string) bool {
	for _, u := range o.Units {
		if u.ID == id {
			return true
		}
	}
	return false
}

// findSlot finds an availability by id (its local start time, RFC 3339).
func (s *Server) findSlot(cfg Config, p product, oid, id string) (slot, bool) {
	t, err := time.Parse(time.RFC3339, id)
	if err != nil {
		return slot{}, false
	}
	day, _ := time.Parse(time.DateOnly, t.Format(time.DateOnly))
	for _, sl := range s.slots(cfg, p, oid, day, day.AddDate(0, 0, 1), cfg.Clock()) {
		if sl.id == id {
			return sl, true
		}
	}
	return slot{}, false
}

type wirePrice struct {
	OptionID       string `json:"optionId"`
	LocalDateStart string `json:"localDateStart"`
	LocalDateEnd   string `json:"localDateEnd"`
	UnitPricing    []struct {
		UnitID            string `json:"unitId"`
		Currency          string `json:"currency"`
		CurrencyPrecision int    `json:"currencyPrecision"`
		Retail            int64  `json:"retail"`
		Net               int64  `json:"net"`
	} `json:"unitPricing"`
}

// servePricing is the price-schedule read: one entry per option and
// calendar month overlapping [localDateStart, localDateEnd).
func (s *Server) servePricing(w http.ResponseWriter, r *http.Request, cfg Config, sid, pid string, fail func(int, string, string)) {
	p, ok := cfg.product(sid, pid)
	if !ok {
		fail(http.StatusNotFound, "INVALID_PRODUCT_ID", "unknown product")
		return
	}
	q := r.URL.Query()
	from, err1 := parseDate(q.Get("localDateStart"))
	to, err2 := parseDate(q.Get("localDateEnd"))
	if err1 != nil || err2 != nil || !from.Before(to) || to.Sub(from) > 400*24*time.Hour {
		fail(http.StatusBadRequest, "BAD_REQUEST", "localDateStart and localDateEnd: dates, start before end")
		return
	}
	out := []wirePrice{}
	for _, o := range p.wire.Options {
		for m := time.Date(from.Year(), from.Month(), 1, 0, 0, 0, 0, time.UTC); m.Before(to); m = m.AddDate(0, 1, 0) {
			ls, le := m, m.AddDate(0, 1, 0)
			if ls.Before(from) {
				ls = from
			}
			if le.After(to) {
				le = to
			}
			e := wirePrice{OptionID: o.ID, LocalDateStart: ls.Format(time.DateOnly), LocalDateEnd: le.Format(time.DateOnly)}
			for _, u := range o.Units {
				retail := retailPrice(cfg, o.ID, u.ID, m)
				e.UnitPricing = append(e.UnitPricing, struct {
					UnitID            string `json:"unitId"`
					Currency          string `json:"currency"`
					CurrencyPrecision int    `json:"currencyPrecision"`
					Retail            int64  `json:"retail"`
					Net               int64  `json:"net"`
				}{u.ID, "EUR", 2, retail, retail * 8 / 10})
			}
			out = append(out, e)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// retailPrice is the price in cents of a unit of an option in the calendar
// month of date (either dialect: the v2 price schedule and OCTO's
// per-availability unitPricing agree).
func retailPrice(cfg Config, optionID, unitID string, date time.Time) int64 {
	m := time.Date(date.Year(), date.Month(), 1, 0, 0, 0, 0, time.UTC)
	return int64(2000 + hash(cfg.Seed, optionID+unitID, m.Unix(), 0)%8000)
}

// decodeBody reads a JSON request body of at most 1 MiB, strictly.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

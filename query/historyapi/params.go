package historyapi

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/schemas"
)

// Paging bounds.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
	// MaxOffset bounds offset paging: every page reads and skips offset
	// rows, so deep pages get slow; narrow from/to instead.
	MaxOffset = 100_000
	// maxDeliveryIDLen bounds the deliveryId filter (ids are UUIDs).
	maxDeliveryIDLen = 128
)

// page is limit/offset and the time range shared by both endpoints.
type page struct {
	limit, offset int
	from, to      time.Time // zero: unbounded
}

func (p page) paging(count int, more bool) Paging {
	return Paging{Limit: p.limit, Offset: p.offset, Count: count, More: more}
}

type deliveryFilter struct {
	page
	subscriber string
	typ        string
	status     int // -1: any
	outcome    string
	deliveryID string // one delivery's attempts (the console's attempt list)
}

type availabilityFilter struct {
	page
	supplierID string
	productID  string
}

// outcomes a reseller may filter on (schemas, DeliveryAttempt.Outcome).
var outcomes = []string{schemas.OutcomeDelivered, schemas.OutcomeRetry, schemas.OutcomeFailed, schemas.OutcomeSuppressed, schemas.OutcomeDropped}

func parseDeliveryFilter(args *fasthttp.Args) (deliveryFilter, error) {
	f := deliveryFilter{status: -1}
	var err error
	if f.page, err = parsePage(args); err != nil {
		return f, err
	}
	if v := args.Peek("type"); len(v) > 0 {
		f.typ = string(v)
		if !slices.Contains(schemas.NotificationTypes(), f.typ) {
			return f, apierror.Invalid("type", "must be one of channelbinding, supplier, product, rate, availability, priceschedule, booking")
		}
	}
	if v := args.Peek("status"); len(v) > 0 {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 0 || n > 999 {
			return f, apierror.Invalid("status", "must be an HTTP status code (0 for attempts without a response)")
		}
		f.status = n
	}
	if v := args.Peek("outcome"); len(v) > 0 {
		f.outcome = string(v)
		if !slices.Contains(outcomes, f.outcome) {
			return f, apierror.Invalid("outcome", "must be one of delivered, retry, failed, suppressed, dropped")
		}
	}
	if v := args.Peek("deliveryId"); len(v) > 0 {
		f.deliveryID = string(v)
		if len(v) > maxDeliveryIDLen || strings.IndexFunc(f.deliveryID, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
			return f, apierror.Invalid("deliveryId", "must be 1 to 128 printable characters (a delivery id)")
		}
	}
	return f, nil
}

func parseAvailabilityFilter(args *fasthttp.Args) (availabilityFilter, error) {
	var f availabilityFilter
	var err error
	if f.page, err = parsePage(args); err != nil {
		return f, err
	}
	f.supplierID = string(args.Peek("supplierId"))
	if f.supplierID == "" {
		return f, apierror.Invalid("supplierId", "is required")
	}
	f.productID = string(args.Peek("productId"))
	return f, nil
}

func parsePage(args *fasthttp.Args) (page, error) {
	p := page{limit: DefaultLimit}
	var err error
	if p.limit, err = intArg(args, "limit", DefaultLimit, 1, MaxLimit); err != nil {
		return p, err
	}
	if p.offset, err = intArg(args, "offset", 0, 0, MaxOffset); err != nil {
		return p, err
	}
	if p.from, err = timeArg(args, "from"); err != nil {
		return p, err
	}
	if p.to, err = timeArg(args, "to"); err != nil {
		return p, err
	}
	if !p.from.IsZero() && !p.to.IsZero() && !p.from.Before(p.to) {
		return p, apierror.Invalid("to", "must be after from")
	}
	return p, nil
}

func intArg(args *fasthttp.Args, name string, def, lo, hi int) (int, error) {
	v := args.Peek(name)
	if len(v) == 0 {
		return def, nil
	}
	n, err := strconv.Atoi(string(v))
	if err != nil || n < lo || n > hi {
		return 0, apierror.Invalid(name, "must be an integer from "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi))
	}
	return n, nil
}

// timeArg parses an RFC 3339 time (fractions allowed) within what the
// DateTime columns hold. A space stands for '+': an unencoded
// "+01:00" offset arrives as " 01:00" after query-string decoding.
func timeArg(args *fasthttp.Args, name string) (time.Time, error) {
	v := args.Peek(name)
	if len(v) == 0 {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, strings.ReplaceAll(string(v), " ", "+"))
	if err != nil || t.Year() < 1970 || t.Year() > 2105 {
		return time.Time{}, apierror.Invalid(name, "must be an RFC 3339 time such as 2026-03-01T00:00:00Z")
	}
	return t.UTC(), nil
}

// Package reseller maps the reseller catalog reads of spec doc 2 to the
// catalog: suppliers, products and rates (v1.2 and v1.3) and the price
// schedule of a rate. What a reseller sees is governed by its channel's
// bindings (internal/catalog decides; unbound or unknown is 404).
//
// These are the hot path: a handler writes the response from the
// renderings the catalog keeps in Redis, through a pooled buffer, without
// encoding/json. Resellers only (403 for other roles).
package reseller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogredis"
	"github.com/switchbackhq/switchback/internal/platform/jsonwire"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
)

var resellerOnly = []principals.Role{principals.RoleReseller}

// Path parameters (spec doc 2 spelling).
const (
	pSupplier = "supplier_id"
	pProduct  = "product_id"
	pRate     = "rate_id"
)

// Reader is what the reseller API needs of the catalog; *catalogredis.Store
// implements it.
type Reader interface {
	AppendSuppliers(ctx context.Context, dst []byte, channel string, v catalogredis.SupplierVersion, partnerID, code string, now time.Time) ([]byte, error)
	AppendSupplier(ctx context.Context, dst []byte, channel, sid string, v catalogredis.SupplierVersion, now time.Time) ([]byte, error)
	AppendProducts(ctx context.Context, dst []byte, channel, sid string, now time.Time) ([]byte, error)
	AppendProduct(ctx context.Context, dst []byte, channel, sid, pid string, now time.Time) ([]byte, error)
	AppendRates(ctx context.Context, dst []byte, channel, sid, pid string, now time.Time) ([]byte, error)
	AppendRate(ctx context.Context, dst []byte, channel, sid, pid, rid string, now time.Time) ([]byte, error)
	ChannelPriceSchedule(ctx context.Context, channel, sid, pid, rid string, from, until, now time.Time) (catalog.PriceSchedule, error)
}

// Register adds the reseller catalog routes to s.
func Register(s *httpapi.Server, store Reader) {
	h := handlers{st: store}
	const (
		sup  = "/suppliers/{" + pSupplier + "}"
		prod = sup + "/products/{" + pProduct + "}"
	)
	v12 := s.Group(httpapi.BaseResellerV12)
	v12.Handle(http.MethodGet, "/suppliers", resellerOnly, h.suppliersV12)
	v12.Handle(http.MethodGet, sup, resellerOnly, h.supplierV12)
	v12.Handle(http.MethodGet, sup+"/products", resellerOnly, h.products)
	v12.Handle(http.MethodGet, prod, resellerOnly, h.product)
	v12.Handle(http.MethodGet, prod+"/rates", resellerOnly, h.rates)
	v12.Handle(http.MethodGet, prod+"/rates/{"+pRate+"}", resellerOnly, h.rate)
	v13 := s.Group(httpapi.BaseResellerV13)
	v13.Handle(http.MethodGet, "/suppliers", resellerOnly, h.suppliersV13)
	v13.Handle(http.MethodGet, sup, resellerOnly, h.supplierV13)
	// Products and rates of v1.3 (listed by spec doc 2 as v1.3 endpoints,
	// their resources "not shown"): the v1.2 shapes with v1.3's supplier
	// conventions (docs/decisions.md, "Reseller v1.3 products and rates").
	v13.Handle(http.MethodGet, sup+"/products", resellerOnly, h.productsV13)
	v13.Handle(http.MethodGet, prod, resellerOnly, h.productV13)
	v13.Handle(http.MethodGet, prod+"/rates", resellerOnly, h.rates)
	v13.Handle(http.MethodGet, prod+"/rates/{"+pRate+"}", resellerOnly, h.rate)
	// The price schedule of a bound rate (not shown in the spec, v1.3 not
	// either: the same shape under both; docs/decisions.md).
	for _, g := range []*httpapi.Group{v12, v13} {
		g.Handle(http.MethodGet, prod+"/rates/{"+pRate+"}/priceschedule", resellerOnly, h.priceSchedule)
	}
}

// handlers take "now" from the request (httpapi.Request.Time).
type handlers struct {
	st Reader
}

func (h handlers) suppliersV12(r *httpapi.Request) error {
	return h.suppliers(r, catalogredis.SupplierV12)
}
func (h handlers) suppliersV13(r *httpapi.Request) error {
	return h.suppliers(r, catalogredis.SupplierV13)
}

func (h handlers) suppliers(r *httpapi.Request, v catalogredis.SupplierVersion) error {
	args := r.Ctx.QueryArgs()
	partnerID, code := string(args.Peek("partner_id")), string(args.Peek("code"))
	return write(r, "suppliers", func(dst []byte) ([]byte, error) {
		return h.st.AppendSuppliers(r.Context(), dst, r.Principal.ChannelID, v, partnerID, code, r.Time())
	})
}

func (h handlers) supplierV12(r *httpapi.Request) error {
	return write(r, "supplier", func(dst []byte) ([]byte, error) {
		return h.st.AppendSupplier(r.Context(), dst, r.Principal.ChannelID, r.Param(pSupplier), catalogredis.SupplierV12, r.Time())
	})
}

func (h handlers) supplierV13(r *httpapi.Request) error {
	v := catalogredis.SupplierV13
	switch c := r.Ctx.QueryArgs().Peek("content"); string(c) {
	case "true":
		v = catalogredis.SupplierV13Content
	case "", "false":
	default:
		return apierror.Invalid("content", "must be true or false")
	}
	return write(r, "supplier", func(dst []byte) ([]byte, error) {
		return h.st.AppendSupplier(r.Context(), dst, r.Principal.ChannelID, r.Param(pSupplier), v, r.Time())
	})
}

func (h handlers) products(r *httpapi.Request) error {
	return write(r, "products", func(dst []byte) ([]byte, error) {
		return h.st.AppendProducts(r.Context(), dst, r.Principal.ChannelID, r.Param(pSupplier), r.Time())
	})
}

func (h handlers) product(r *httpapi.Request) error {
	return write(r, "product", func(dst []byte) ([]byte, error) {
		return h.st.AppendProduct(r.Context(), dst, r.Principal.ChannelID, r.Param(pSupplier), r.Param(pProduct), r.Time())
	})
}

// productsV13 and productV13 are the v1.2 renderings with the products'
// locations in v1.3's Location shape: the deprecated 1.2 fields (city,
// country, state, utcOffset) left out, as Supplier 1.3 leaves them out
// (spec doc 2, Versioning 2).
func (h handlers) productsV13(r *httpapi.Request) error {
	return write(r, "products", func(dst []byte) ([]byte, error) {
		start := len(dst)
		dst, err := h.st.AppendProducts(r.Context(), dst, r.Principal.ChannelID, r.Param(pSupplier), r.Time())
		if err != nil {
			return dst, err
		}
		return locationsV13(dst, start, true)
	})
}

func (h handlers) productV13(r *httpapi.Request) error {
	return write(r, "product", func(dst []byte) ([]byte, error) {
		start := len(dst)
		dst, err := h.st.AppendProduct(r.Context(), dst, r.Principal.ChannelID, r.Param(pSupplier), r.Param(pProduct), r.Time())
		if err != nil {
			return dst, err
		}
		return locationsV13(dst, start, false)
	})
}

// deprecatedLocationKeys are the Location 1.2 fields that 1.3 replaced.
var deprecatedLocationKeys = [][]byte{[]byte(`"city":`), []byte(`"country":`), []byte(`"state":`), []byte(`"utcOffset":`)}

// locationsV13 rewrites the product JSON (an array when list) appended
// after start without the deprecated location fields. Products without
// them (the common case: a key that appears nowhere) are left as they
// are, bytes copied.
func locationsV13(dst []byte, start int, list bool) ([]byte, error) {
	raw := dst[start:]
	found := false
	for _, k := range deprecatedLocationKeys {
		if bytes.Contains(raw, k) {
			found = true
			break
		}
	}
	if !found {
		return dst, nil
	}
	var ps []catalog.Product
	if list {
		if err := json.Unmarshal(raw, &ps); err != nil {
			return dst, fmt.Errorf("decode stored products: %w", err)
		}
	} else {
		var p catalog.Product
		if err := json.Unmarshal(raw, &p); err != nil {
			return dst, fmt.Errorf("decode stored product: %w", err)
		}
		ps = []catalog.Product{p}
	}
	for i := range ps {
		for j := range ps[i].Locations {
			l := &ps[i].Locations[j]
			l.City, l.Country, l.State, l.UTCOffset = "", "", "", ""
		}
	}
	var out []byte
	var err error
	if list {
		out, err = json.Marshal(ps)
	} else {
		out, err = json.Marshal(ps[0])
	}
	if err != nil {
		return dst, fmt.Errorf("encode product: %w", err)
	}
	return append(dst[:start], out...), nil
}

func (h handlers) rates(r *httpapi.Request) error {
	return write(r, "rates", func(dst []byte) ([]byte, error) {
		return h.st.AppendRates(r.Context(), dst, r.Principal.ChannelID, r.Param(pSupplier), r.Param(pProduct), r.Time())
	})
}

func (h handlers) rate(r *httpapi.Request) error {
	return write(r, "rate", func(dst []byte) ([]byte, error) {
		return h.st.AppendRate(r.Context(), dst, r.Principal.ChannelID, r.Param(pSupplier), r.Param(pProduct), r.Param(pRate), r.Time())
	})
}

var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// write answers 200 {"meta":{"reqId":...},"<key>":<what fill appends>}.
func write(r *httpapi.Request, key string, fill func(dst []byte) ([]byte, error)) error {
	bp := buffers.Get().(*[]byte)
	b := append((*bp)[:0], `{"meta":{"reqId":`...)
	b = jsonwire.AppendASCII(b, r.ID)
	b = append(b, `},"`...)
	b = append(b, key...)
	b = append(b, `":`...)
	b, err := fill(b)
	if err == nil {
		b = append(b, '}')
		resp := &r.Ctx.Response
		resp.SetStatusCode(http.StatusOK)
		resp.Header.SetContentType("application/json")
		resp.SetBody(b)
	}
	if cap(b) <= 256<<10 { // do not keep one huge listing's buffer forever
		*bp = b[:0]
		buffers.Put(bp)
	}
	return err
}

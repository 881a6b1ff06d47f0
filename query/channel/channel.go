// Package channel maps the channel interface v1.2 (/channel/v1.2, spec doc
// 2) to the catalog: the channels, the bindings of a product to channels,
// and the operator setup paths (suppliers, products, rates,
// availabilities) with the GET/PUT/DELETE an operator needs to correct its
// data. It also registers the admin's channel management
// (/admin/v1/channels).
//
// Operators and admins only: a reseller gets 403. Scope (an operator
// touches only its own suppliers, else 404) and every rule live in
// internal/catalog; this package decodes bodies, calls the store and
// encodes answers.
package channel

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogredis"
	"github.com/switchbackhq/switchback/internal/catalog/catalogwire"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
)

// writeTimeout bounds a write: the wait for the supplier's lock (5 s) and
// for the broker's acknowledgement (10 s).
const writeTimeout = 16 * time.Second

var (
	operatorRoles = []principals.Role{principals.RoleOperator, principals.RoleAdmin}
	adminOnly     = []principals.Role{principals.RoleAdmin}
)

// Path parameters (spec doc 2 spelling).
const (
	pSupplier = "supplier_id"
	pProduct  = "product_id"
	pRate     = "rate_id"
	pChannel  = "channel_id"
)

// Register adds the channel interface v1.2 routes to s.
func Register(s *httpapi.Server, store *catalogredis.Store) {
	h := handlers{st: store}
	g := s.Group(httpapi.BaseChannelV12)
	const (
		sup   = "/suppliers/{" + pSupplier + "}"
		prod  = sup + "/products/{" + pProduct + "}"
		rate  = prod + "/rates/{" + pRate + "}"
		bind  = prod + "/channels/{" + pChannel + "}"
		bulkP = "/bulk" + sup + "/products"
		bulkR = "/bulk" + prod + "/rates"
	)
	// Channels and bindings.
	g.Handle(http.MethodGet, "/channels", operatorRoles, h.listChannels)
	g.Handle(http.MethodGet, "/channels/{"+pChannel+"}", operatorRoles, h.getChannel)
	g.Handle(http.MethodGet, prod+"/channels", operatorRoles, h.listBindings)
	g.Handle(http.MethodGet, bind, operatorRoles, h.getBinding)
	g.Handle(http.MethodPost, bind, operatorRoles, h.createBinding)
	g.Handle(http.MethodPut, bind, operatorRoles, h.putBinding)
	g.Handle(http.MethodDelete, bind, operatorRoles, h.deleteBinding)
	// Operator setup: suppliers.
	g.Handle(http.MethodPost, "/supplier", operatorRoles, h.createSupplier)
	g.Handle(http.MethodPost, "/suppliers", operatorRoles, h.createSupplier)
	g.Handle(http.MethodGet, "/suppliers", operatorRoles, h.listSuppliers)
	g.Handle(http.MethodGet, sup, operatorRoles, h.getSupplier)
	g.Handle(http.MethodPut, sup, operatorRoles, h.putSupplier)
	g.Handle(http.MethodDelete, sup, operatorRoles, h.deleteSupplier)
	// Products.
	g.Handle(http.MethodPost, sup+"/products", operatorRoles, h.createProduct)
	g.Handle(http.MethodPost, bulkP, operatorRoles, h.bulkProducts)
	g.Handle(http.MethodGet, sup+"/products", operatorRoles, h.listProducts)
	g.Handle(http.MethodGet, prod, operatorRoles, h.getProduct)
	g.Handle(http.MethodPut, prod, operatorRoles, h.putProduct)
	g.Handle(http.MethodDelete, prod, operatorRoles, h.deleteProduct)
	// Rates.
	g.Handle(http.MethodPost, prod+"/rates", operatorRoles, h.createRate)
	g.Handle(http.MethodPost, bulkR, operatorRoles, h.bulkRates)
	g.Handle(http.MethodGet, prod+"/rates", operatorRoles, h.listRates)
	g.Handle(http.MethodGet, rate, operatorRoles, h.getRate)
	g.Handle(http.MethodPut, rate, operatorRoles, h.putRate)
	g.Handle(http.MethodDelete, rate, operatorRoles, h.deleteRate)
	// Availabilities.
	// The operators' hot write: the catalog reads the views' epoch in the
	// batch's own pipelines (catalogredis.PipelinedFence).
	g.HandleFenced(http.MethodPut, rate+"/availabilities", operatorRoles, h.putAvailabilities)
	g.Handle(http.MethodGet, rate+"/availabilities", operatorRoles, h.getAvailabilities)
	// Price schedule (not shown in the spec: docs/decisions.md).
	g.Handle(http.MethodPut, rate+"/priceschedule", operatorRoles, h.putPriceSchedule)
	g.Handle(http.MethodGet, rate+"/priceschedule", operatorRoles, h.getPriceSchedule)
}

// RegisterAdmin adds the admin's channel management to s:
// POST /admin/v1/channels {name, companyName, ...} -> 201 with the channel
// (its id at the top level), GET /admin/v1/channels, GET and PUT
// /admin/v1/channels/{id}.
func RegisterAdmin(s *httpapi.Server, store *catalogredis.Store) {
	h := handlers{st: store}
	g := s.Group(httpapi.BaseAdminV1)
	g.Handle(http.MethodPost, "/channels", adminOnly, h.adminCreateChannel)
	g.Handle(http.MethodGet, "/channels", adminOnly, h.adminListChannels)
	g.Handle(http.MethodGet, "/channels/{id}", adminOnly, h.adminGetChannel)
	g.Handle(http.MethodPut, "/channels/{id}", adminOnly, h.adminPutChannel)
}

type handlers struct{ st *catalogredis.Store }

func writeCtx(r *httpapi.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), writeTimeout)
}

// ---- channels ----

type channelsBody struct {
	Channels []catalogwire.ChannelView `json:"channels"`
}

type channelBody struct {
	Channel catalogwire.ChannelView `json:"channel"`
}

func (h handlers) listChannels(r *httpapi.Request) error {
	cs, err := h.st.Channels(r.Context())
	if err != nil {
		return err
	}
	out := channelsBody{Channels: make([]catalogwire.ChannelView, len(cs))}
	for i, c := range cs {
		out.Channels[i] = catalogwire.ChannelOf(c)
	}
	return r.JSON(http.StatusOK, out)
}

func (h handlers) getChannel(r *httpapi.Request) error {
	id := r.Param(pChannel)
	if !catalog.ValidID(id) {
		// Spec doc 2 lists 400 and 401 only for this call: a channel id
		// that cannot be one, or that no channel has, is a bad request.
		return apierror.Invalid(pChannel, "is not a valid channel id")
	}
	c, err := h.st.Channel(r.Context(), id)
	if errors.Is(err, catalog.ErrNotFound) {
		return apierror.Invalid(pChannel, "is not the id of a channel")
	}
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, channelBody{Channel: catalogwire.ChannelOf(c)})
}

// ---- bindings ----

type channelRatesBody struct {
	ChannelRates []catalogwire.ChannelRate `json:"channelRates"`
}

func (h handlers) listBindings(r *httpapi.Request) error {
	bs, err := h.st.ProductBindings(r.Context(), catalog.ScopeOf(r.Principal), r.Param(pSupplier), r.Param(pProduct))
	if err != nil {
		return err
	}
	out := channelRatesBody{ChannelRates: make([]catalogwire.ChannelRate, len(bs))}
	for i, b := range bs {
		out.ChannelRates[i] = b.ChannelRate()
	}
	return r.JSON(http.StatusOK, out)
}

func (h handlers) getBinding(r *httpapi.Request) error {
	b, err := h.st.ProductBinding(r.Context(), catalog.ScopeOf(r.Principal), r.Param(pSupplier), r.Param(pProduct), r.Param(pChannel))
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, channelRatesBody{ChannelRates: []catalogwire.ChannelRate{b.ChannelRate()}})
}

func (h handlers) createBinding(r *httpapi.Request) error { return h.writeBinding(r, true) }
func (h handlers) putBinding(r *httpapi.Request) error    { return h.writeBinding(r, false) }

func (h handlers) writeBinding(r *httpapi.Request, create bool) error {
	var in catalog.BindingInput
	if err := r.DecodeJSON(&in); err != nil {
		return err
	}
	ctx, cancel := writeCtx(r)
	defer cancel()
	sid, pid, cid := r.Param(pSupplier), r.Param(pProduct), r.Param(pChannel)
	var (
		b   catalogwire.BoundProduct
		err error
	)
	status := http.StatusOK
	if create {
		b, err = h.st.CreateBinding(ctx, catalog.ScopeOf(r.Principal), sid, pid, cid, in)
		status = http.StatusCreated
	} else {
		b, err = h.st.PutBinding(ctx, catalog.ScopeOf(r.Principal), sid, pid, cid, in)
	}
	if err != nil {
		return err
	}
	return r.JSON(status, channelRatesBody{ChannelRates: []catalogwire.ChannelRate{b.ChannelRate()}})
}

func (h handlers) deleteBinding(r *httpapi.Request) error {
	ctx, cancel := writeCtx(r)
	defer cancel()
	if err := h.st.DeleteBinding(ctx, catalog.ScopeOf(r.Principal), r.Param(pSupplier), r.Param(pProduct), r.Param(pChannel)); err != nil {
		return err
	}
	return r.NoContent()
}

// ---- suppliers ----

type supplierBody struct {
	Supplier catalogwire.SupplierView `json:"supplier"`
}

type suppliersBody struct {
	Suppliers []catalogwire.SupplierView `json:"suppliers"`
}

func (h handlers) createSupplier(r *httpapi.Request) error {
	var in catalog.SupplierInput
	if err := r.DecodeJSON(&in); err != nil {
		return err
	}
	ctx, cancel := writeCtx(r)
	defer cancel()
	sup, err := h.st.CreateSupplier(ctx, catalog.ScopeOf(r.Principal), in)
	if err != nil {
		return err
	}
	return r.JSON(http.StatusCreated, supplierBody{Supplier: catalogwire.SupplierOf(sup)})
}

func (h handlers) listSuppliers(r *httpapi.Request) error {
	sups, err := h.st.Suppliers(r.Context(), catalog.ScopeOf(r.Principal))
	if err != nil {
		return err
	}
	out := suppliersBody{Suppliers: make([]catalogwire.SupplierView, len(sups))}
	for i, s := range sups {
		out.Suppliers[i] = catalogwire.SupplierOf(s)
	}
	return r.JSON(http.StatusOK, out)
}

func (h handlers) getSupplier(r *httpapi.Request) error {
	sup, err := h.st.Supplier(r.Context(), catalog.ScopeOf(r.Principal), r.Param(pSupplier))
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, supplierBody{Supplier: catalogwire.SupplierOf(sup)})
}

func (h handlers) putSupplier(r *httpapi.Request) error {
	var in catalog.SupplierInput
	if err := r.DecodeJSON(&in); err != nil {
		return err
	}
	ctx, cancel := writeCtx(r)
	defer cancel()
	sup, err := h.st.PutSupplier(ctx, catalog.ScopeOf(r.Principal), r.Param(pSupplier), in)
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, supplierBody{Supplier: catalogwire.SupplierOf(sup)})
}

func (h handlers) deleteSupplier(r *httpapi.Request) error {
	ctx, cancel := writeCtx(r)
	defer cancel()
	if err := h.st.DeleteSupplier(ctx, catalog.ScopeOf(r.Principal), r.Param(pSupplier)); err != nil {
		return err
	}
	return r.NoContent()
}

// ---- products ----

type productBody struct {
	Product catalog.Product `json:"product"`
}

type productsBody struct {
	Products []catalog.Product `json:"products"`
}

// bulkProductsRequest is POST /bulk/suppliers/{supplier_id}/products.
type bulkProductsRequest struct {
	Products []catalog.ProductInput `json:"products"`
}

func (h handlers) createProduct(r *httpapi.Request) error {
	var in catalog.ProductInput
	if err := r.DecodeJSON(&in); err != nil {
		return err
	}
	ctx, cancel := writeCtx(r)
	defer cancel()
	p, err := h.st.CreateProduct(ctx, catalog.ScopeOf(r.Principal), r.Param(pSupplier), in)
	if err != nil {
		return err
	}
	return r.JSON(http.StatusCreated, productBody{Product: p})
}

func (h handlers) bulkProducts(r *httpapi.Request) error {
	var in bulkProductsRequest
	if err := r.DecodeJSON(&in); err != nil {
		return err
	}
	ctx, cancel := writeCtx(r)
	defer cancel()
	ps, err := h.st.UpsertProducts(ctx, catalog.ScopeOf(r.Principal), r.Param(pSupplier), in.Products)
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, productsBody{Products: ps})
}

func (h handlers) listProducts(r *httpapi.Request) error {
	ps, err := h.st.Products(r.Context(), catalog.ScopeOf(r.Principal), r.Param(pSupplier))
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, productsBody{Products: ps})
}

func (h handlers) getProduct(r *httpapi.Request) error {
	p, err := h.st.Product(r.Context(), catalog.ScopeOf(r.Principal), r.Param(pSupplier), r.Param(pProduct))
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, productBody{Product: p})
}

func (h handlers) putProduct(r *httpapi.Request) error {
	var in catalog.ProductInput
	if err := r.DecodeJSON(&in); err != nil {
		return err
	}
	ctx, cancel := writeCtx(r)
	defer cancel()
	p, err := h.st.PutProduct(ctx, catalog.ScopeOf(r.Principal), r.Param(pSupplier), r.Param(pProduct), in)
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, productBody{Product: p})
}

func (h handlers) deleteProduct(r *httpapi.Request) error {
	ctx, cancel := writeCtx(r)
	defer cancel()
	if err := h.st.DeleteProduct(ctx, catalog.ScopeOf(r.Principal), r.Param(pSupplier), r.Param(pProduct)); err != nil {
		return err
	}
	return r.NoContent()
}

// ---- rates ----

type rateBody struct {
	Rate catalogwire.RateView `json:"rate"`
}

type ratesBody struct {
	Rates []catalogwire.RateView `json:"rates"`
}

// bulkRatesRequest is POST /bulk/suppliers/{supplier_id}/products/{product_id}/rates.
type bulkRatesRequest struct {
	Rates []catalog.RateInput `json:"rates"`
}

func views(rs []catalog.Rate) ratesBody {
	out := ratesBody{Rates: make([]catalogwire.RateView, len(rs))}
	for i, r := range rs {
		out.Rates[i] = catalogwire.RateOf(r)
	}
	return out
}

func (h handlers) createRate(r *httpapi.Request) error {
	var in catalog.RateInput
	if err := r.DecodeJSON(&in); err != nil {
		return err
	}
	ctx, cancel := writeCtx(r)
	defer cancel()
	rt, err := h.st.CreateRate(ctx, catalog.ScopeOf(r.Principal), r.Param(pSupplier), r.Param(pProduct), in)
	if err != nil {
		return err
	}
	return r.JSON(http.StatusCreated, rateBody{Rate: catalogwire.RateOf(rt)})
}

func (h handlers) bulkRates(r *httpapi.Request) error {
	var in bulkRatesRequest
	if err := r.DecodeJSON(&in); err != nil {
		return err
	}
	ctx, cancel := writeCtx(r)
	defer cancel()
	rs, err := h.st.UpsertRates(ctx, catalog.ScopeOf(r.Principal), r.Param(pSupplier), r.Param(pProduct), in.Rates)
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, views(rs))
}

func (h handlers) listRates(r *httpapi.Request) error {
	rs, err := h.st.Rates(r.Context(), catalog.ScopeOf(r.Principal), r.Param(pSupplier), r.Param(pProduct))
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, views(rs))
}

func (h handlers) getRate(r *httpapi.Request) error {
	rt, err := h.st.Rate(r.Context(), catalog.ScopeOf(r.Principal), r.Param(pSupplier), r.Param(pProduct), r.Param(pRate))
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, rateBody{Rate: catalogwire.RateOf(rt)})
}

func (h handlers) putRate(r *httpapi.Request) error {
	var in catalog.RateInput
	if err := r.DecodeJSON(&in); err != nil {
		return err
	}
	ctx, cancel := writeCtx(r)
	defer cancel()
	rt, err := h.st.PutRate(ctx, catalog.ScopeOf(r.Principal), r.Param(pSupplier), r.Param(pProduct), r.Param(pRate), in)
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, rateBody{Rate: catalogwire.RateOf(rt)})
}

func (h handlers) deleteRate(r *httpapi.Request) error {
	ctx, cancel := writeCtx(r)
	defer cancel()
	if err := h.st.DeleteRate(ctx, catalog.ScopeOf(r.Principal), r.Param(pSupplier), r.Param(pProduct), r.Param(pRate)); err != nil {
		return err
	}
	return r.NoContent()
}

// ---- availabilities ----

// availabilitiesRequest is PUT .../rates/{rate_id}/availabilities.
type availabilitiesRequest struct {
	Availabilities []catalog.Availability `json:"availabilities"`
}

func (h handlers) putAvailabilities(r *httpapi.Request) error {
	var in availabilitiesRequest
	if as, ok := decodeAvailabilities(r.Ctx.PostBody()); ok {
		in.Availabilities = as
	} else if err := r.DecodeJSON(&in); err != nil {
		return err
	}
	ctx, cancel := writeCtx(r)
	defer cancel()
	set, err := h.st.PutAvailabilities(ctx, catalog.ScopeOf(r.Principal), r.Param(pSupplier), r.Param(pProduct), r.Param(pRate), in.Availabilities)
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, set)
}

func (h handlers) getAvailabilities(r *httpapi.Request) error {
	set, err := h.st.Availabilities(r.Context(), catalog.ScopeOf(r.Principal), r.Param(pSupplier), r.Param(pProduct), r.Param(pRate))
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, set)
}

// ---- price schedules ----

// priceScheduleRequest is PUT .../rates/{rate_id}/priceschedule: the
// whole schedule of the rate, replacing the one before.
type priceScheduleRequest struct {
	Entries []catalog.PriceScheduleEntry `json:"entries"`
}

func (h handlers) putPriceSchedule(r *httpapi.Request) error {
	var in priceScheduleRequest
	if err := r.DecodeJSON(&in); err != nil {
		return err
	}
	ctx, cancel := writeCtx(r)
	defer cancel()
	ps, err := h.st.PutPriceSchedule(ctx, catalog.ScopeOf(r.Principal), r.Param(pSupplier), r.Param(pProduct), r.Param(pRate), in.Entries)
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, ps)
}

func (h handlers) getPriceSchedule(r *httpapi.Request) error {
	ps, err := h.st.PriceSchedule(r.Context(), catalog.ScopeOf(r.Principal), r.Param(pSupplier), r.Param(pProduct), r.Param(pRate))
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, ps)
}

// ---- admin ----

type adminChannels struct {
	Channels []catalog.Channel `json:"channels"`
}

func (h handlers) adminCreateChannel(r *httpapi.Request) error {
	var in catalog.ChannelInput
	if err := r.DecodeJSON(&in); err != nil {
		return err
	}
	ctx, cancel := writeCtx(r)
	defer cancel()
	c, err := h.st.CreateChannel(ctx, in)
	if err != nil {
		return err
	}
	return r.JSON(http.StatusCreated, c)
}

func (h handlers) adminListChannels(r *httpapi.Request) error {
	cs, err := h.st.Channels(r.Context())
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, adminChannels{Channels: cs})
}

func (h handlers) adminGetChannel(r *httpapi.Request) error {
	c, err := h.st.Channel(r.Context(), r.Param("id"))
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, c)
}

func (h handlers) adminPutChannel(r *httpapi.Request) error {
	var in catalog.ChannelInput
	if err := r.DecodeJSON(&in); err != nil {
		return err
	}
	ctx, cancel := writeCtx(r)
	defer cancel()
	c, err := h.st.PutChannel(ctx, r.Param("id"), in)
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, c)
}

// Package operator maps the operator channel management of spec doc 3
// (/operator/v2: channels, and the bindings of a product's options to a
// channel) to the catalog. A v2 binding and a channel v1.2 binding are two
// views of one record in internal/catalog: options are rates, and a change
// through either API shows in both.
//
// Operators and admins only (a reseller gets 403); an operator sees only
// its own suppliers (404 otherwise). Rules live in internal/catalog.
package operator

import (
	"context"
	"net/http"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogredis"
	"github.com/switchbackhq/switchback/internal/catalog/catalogwire"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/httpapi"
)

const writeTimeout = 16 * time.Second

var operatorRoles = []principals.Role{principals.RoleOperator, principals.RoleAdmin}

// Path parameters (spec doc 3 spelling).
const (
	pSupplier = "supplierId"
	pProduct  = "productId"
	pChannel  = "channelId"
)

// Register adds the operator v2 channel-management routes to s.
func Register(s *httpapi.Server, store *catalogredis.Store) {
	h := handlers{st: store}
	g := s.Group(httpapi.BaseOperatorV2)
	const bindings = "/suppliers/{" + pSupplier + "}/products/{" + pProduct + "}/bindings"
	g.Handle(http.MethodGet, "/channels", operatorRoles, h.channels)
	g.Handle(http.MethodGet, bindings, operatorRoles, h.list)
	g.Handle(http.MethodGet, bindings+"/{"+pChannel+"}", operatorRoles, h.get)
	g.Handle(http.MethodPut, bindings+"/{"+pChannel+"}", operatorRoles, h.put)
	g.Handle(http.MethodDelete, bindings+"/{"+pChannel+"}", operatorRoles, h.delete)
}

type handlers struct{ st *catalogredis.Store }

type channelsBody struct {
	Channels []catalogwire.ChannelV2 `json:"channels"`
}

func (h handlers) channels(r *httpapi.Request) error {
	cs, err := h.st.Channels(r.Context())
	if err != nil {
		return err
	}
	out := channelsBody{Channels: make([]catalogwire.ChannelV2, len(cs))}
	for i, c := range cs {
		out.Channels[i] = catalogwire.ChannelV2{ID: c.ID, Name: c.Name, CompanyName: c.CompanyName}
	}
	return r.JSON(http.StatusOK, out)
}

type bindingsBody struct {
	Bindings []catalogwire.BindingV2 `json:"bindings"`
}

type bindingBody struct {
	Binding catalogwire.BindingV2 `json:"binding"`
}

// putRequest is the PUT body: the complete set of bound options.
type putRequest struct {
	OptionIDs []string `json:"optionIds"`
}

func (h handlers) list(r *httpapi.Request) error {
	bs, err := h.st.ProductBindings(r.Context(), catalog.ScopeOf(r.Principal), r.Param(pSupplier), r.Param(pProduct))
	if err != nil {
		return err
	}
	out := bindingsBody{Bindings: make([]catalogwire.BindingV2, len(bs))}
	for i, b := range bs {
		out.Bindings[i] = b.V2()
	}
	return r.JSON(http.StatusOK, out)
}

func (h handlers) get(r *httpapi.Request) error {
	b, err := h.st.ProductBinding(r.Context(), catalog.ScopeOf(r.Principal), r.Param(pSupplier), r.Param(pProduct), r.Param(pChannel))
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, bindingBody{Binding: b.V2()})
}

func (h handlers) put(r *httpapi.Request) error {
	var in putRequest
	if err := r.DecodeJSON(&in); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
	defer cancel()
	b, err := h.st.PutOptions(ctx, catalog.ScopeOf(r.Principal), r.Param(pSupplier), r.Param(pProduct), r.Param(pChannel), in.OptionIDs)
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, bindingBody{Binding: b.V2()})
}

func (h handlers) delete(r *httpapi.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
	defer cancel()
	if err := h.st.DeleteBinding(ctx, catalog.ScopeOf(r.Principal), r.Param(pSupplier), r.Param(pProduct), r.Param(pChannel)); err != nil {
		return err
	}
	return r.NoContent()
}

package catalogtest

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogredis"
	"github.com/switchbackhq/switchback/internal/catalog/catalogwire"
	"github.com/switchbackhq/switchback/internal/principals"
)

// writeTimeout bounds a write as the API bounds it (query/channel): the
// wait for the supplier's lock and for the broker's acknowledgement.
const writeTimeout = 16 * time.Second

// Writer makes the catalog writes of the channel interface as one
// principal, straight on the store: each method decodes the request body
// the route takes (strictly, as the API does: unknown fields refused) and
// calls the store method its handler calls, failing the test on any
// error. It is how a test that is not about the HTTP API sets up a
// catalog; the routes themselves are tested under query/.
type Writer struct {
	t  testing.TB
	st *catalogredis.Store
	p  principals.Principal
}

// As is a Writer acting as c.
func (e *Env) As(t testing.TB, c Cred) Writer { return Writer{t: t, st: e.Store, p: c.Principal} }

// scope is the principal's catalog scope, as the handlers take it.
func (w Writer) scope() catalog.Scope { return catalog.ScopeOf(w.p) }

// Decode decodes body into a T as the API decodes a request body: one
// JSON value, unknown fields refused. It fails t on error.
func Decode[T any](t testing.TB, body string) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(bytes.NewReader([]byte(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, body, err)
	}
	if dec.More() {
		t.Fatalf("decode %T: data after the JSON value in %s", v, body)
	}
	return v
}

// do runs a store write under the API's write timeout and fails the test
// on its error.
func do[T any](w Writer, what string, f func(ctx context.Context) (T, error)) T {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.t.Context(), writeTimeout)
	defer cancel()
	v, err := f(ctx)
	if err != nil {
		w.t.Fatalf("%s as %s (%s): %v", what, w.p.ID, w.p.Role, err)
	}
	return v
}

// CreateSupplier is POST /channel/v1.2/suppliers.
func (w Writer) CreateSupplier(body string) catalog.Supplier {
	w.t.Helper()
	in := Decode[catalog.SupplierInput](w.t, body)
	return do(w, "create supplier", func(ctx context.Context) (catalog.Supplier, error) {
		return w.st.CreateSupplier(ctx, w.scope(), in)
	})
}

// PutSupplier is PUT /channel/v1.2/suppliers/{sid}.
func (w Writer) PutSupplier(sid, body string) catalog.Supplier {
	w.t.Helper()
	in := Decode[catalog.SupplierInput](w.t, body)
	return do(w, "put supplier "+sid, func(ctx context.Context) (catalog.Supplier, error) {
		return w.st.PutSupplier(ctx, w.scope(), sid, in)
	})
}

// DeleteSupplier is DELETE /channel/v1.2/suppliers/{sid}.
func (w Writer) DeleteSupplier(sid string) {
	w.t.Helper()
	do(w, "delete supplier "+sid, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, w.st.DeleteSupplier(ctx, w.scope(), sid)
	})
}

// CreateProduct is POST /channel/v1.2/suppliers/{sid}/products.
func (w Writer) CreateProduct(sid, body string) catalog.Product {
	w.t.Helper()
	in := Decode[catalog.ProductInput](w.t, body)
	return do(w, "create product of "+sid, func(ctx context.Context) (catalog.Product, error) {
		return w.st.CreateProduct(ctx, w.scope(), sid, in)
	})
}

// PutProduct is PUT /channel/v1.2/suppliers/{sid}/products/{pid}.
func (w Writer) PutProduct(sid, pid, body string) catalog.Product {
	w.t.Helper()
	in := Decode[catalog.ProductInput](w.t, body)
	return do(w, "put product "+sid+"/"+pid, func(ctx context.Context) (catalog.Product, error) {
		return w.st.PutProduct(ctx, w.scope(), sid, pid, in)
	})
}

// UpsertProducts is POST /channel/v1.2/bulk/suppliers/{sid}/products
// with the products of bodies.
func (w Writer) UpsertProducts(sid string, bodies ...string) []catalog.Product {
	w.t.Helper()
	ins := make([]catalog.ProductInput, len(bodies))
	for i, b := range bodies {
		ins[i] = Decode[catalog.ProductInput](w.t, b)
	}
	return do(w, "upsert products of "+sid, func(ctx context.Context) ([]catalog.Product, error) {
		return w.st.UpsertProducts(ctx, w.scope(), sid, ins)
	})
}

// DeleteProduct is DELETE /channel/v1.2/suppliers/{sid}/products/{pid}.
func (w Writer) DeleteProduct(sid, pid string) {
	w.t.Helper()
	do(w, "delete product "+sid+"/"+pid, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, w.st.DeleteProduct(ctx, w.scope(), sid, pid)
	})
}

// CreateRate is POST .../products/{pid}/rates.
func (w Writer) CreateRate(sid, pid, body string) catalog.Rate {
	w.t.Helper()
	in := Decode[catalog.RateInput](w.t, body)
	return do(w, "create rate of "+sid+"/"+pid, func(ctx context.Context) (catalog.Rate, error) {
		return w.st.CreateRate(ctx, w.scope(), sid, pid, in)
	})
}

// PutRate is PUT .../products/{pid}/rates/{rid}.
func (w Writer) PutRate(sid, pid, rid, body string) catalog.Rate {
	w.t.Helper()
	in := Decode[catalog.RateInput](w.t, body)
	return do(w, "put rate "+sid+"/"+pid+"/"+rid, func(ctx context.Context) (catalog.Rate, error) {
		return w.st.PutRate(ctx, w.scope(), sid, pid, rid, in)
	})
}

// UpsertRates is POST /channel/v1.2/bulk/suppliers/{sid}/products/{pid}/rates
// with the rates of bodies.
func (w Writer) UpsertRates(sid, pid string, bodies ...string) []catalog.Rate {
	w.t.Helper()
	ins := make([]catalog.RateInput, len(bodies))
	for i, b := range bodies {
		ins[i] = Decode[catalog.RateInput](w.t, b)
	}
	return do(w, "upsert rates of "+sid+"/"+pid, func(ctx context.Context) ([]catalog.Rate, error) {
		return w.st.UpsertRates(ctx, w.scope(), sid, pid, ins)
	})
}

// DeleteRate is DELETE .../products/{pid}/rates/{rid}.
func (w Writer) DeleteRate(sid, pid, rid string) {
	w.t.Helper()
	do(w, "delete rate "+sid+"/"+pid+"/"+rid, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, w.st.DeleteRate(ctx, w.scope(), sid, pid, rid)
	})
}

// PutAvailabilities is PUT .../rates/{rid}/availabilities, body
// {"availabilities":[...]}.
func (w Writer) PutAvailabilities(sid, pid, rid, body string) catalog.AvailabilitySet {
	w.t.Helper()
	in := Decode[struct {
		Availabilities []catalog.Availability `json:"availabilities"`
	}](w.t, body)
	return do(w, "put availabilities of "+sid+"/"+pid+"/"+rid, func(ctx context.Context) (catalog.AvailabilitySet, error) {
		return w.st.PutAvailabilities(ctx, w.scope(), sid, pid, rid, in.Availabilities)
	})
}

// PutPriceSchedule is PUT .../rates/{rid}/priceschedule, body
// {"entries":[...]}.
func (w Writer) PutPriceSchedule(sid, pid, rid, body string) catalog.PriceSchedule {
	w.t.Helper()
	in := Decode[struct {
		Entries []catalog.PriceScheduleEntry `json:"entries"`
	}](w.t, body)
	return do(w, "put price schedule of "+sid+"/"+pid+"/"+rid, func(ctx context.Context) (catalog.PriceSchedule, error) {
		return w.st.PutPriceSchedule(ctx, w.scope(), sid, pid, rid, in.Entries)
	})
}

// CreateBinding is POST .../products/{pid}/channels/{cid}.
func (w Writer) CreateBinding(sid, pid, cid, body string) catalogwire.BoundProduct {
	w.t.Helper()
	in := Decode[catalog.BindingInput](w.t, body)
	return do(w, "bind "+sid+"/"+pid+" to "+cid, func(ctx context.Context) (catalogwire.BoundProduct, error) {
		return w.st.CreateBinding(ctx, w.scope(), sid, pid, cid, in)
	})
}

// PutBinding is PUT .../products/{pid}/channels/{cid}.
func (w Writer) PutBinding(sid, pid, cid, body string) catalogwire.BoundProduct {
	w.t.Helper()
	in := Decode[catalog.BindingInput](w.t, body)
	return do(w, "put binding of "+sid+"/"+pid+" to "+cid, func(ctx context.Context) (catalogwire.BoundProduct, error) {
		return w.st.PutBinding(ctx, w.scope(), sid, pid, cid, in)
	})
}

// PutOptions is the operator v2 PUT
// /operator/v2/suppliers/{sid}/products/{pid}/bindings/{cid}
// {"optionIds":[...]}.
func (w Writer) PutOptions(sid, pid, cid string, optionIDs ...string) catalogwire.BoundProduct {
	w.t.Helper()
	return do(w, "put options of "+sid+"/"+pid+" on "+cid, func(ctx context.Context) (catalogwire.BoundProduct, error) {
		return w.st.PutOptions(ctx, w.scope(), sid, pid, cid, optionIDs)
	})
}

// DeleteBinding is DELETE .../products/{pid}/channels/{cid}.
func (w Writer) DeleteBinding(sid, pid, cid string) {
	w.t.Helper()
	do(w, "unbind "+sid+"/"+pid+" from "+cid, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, w.st.DeleteBinding(ctx, w.scope(), sid, pid, cid)
	})
}

// PutChannel is the admin's PUT /admin/v1/channels/{cid}.
func (w Writer) PutChannel(cid, body string) catalog.Channel {
	w.t.Helper()
	in := Decode[catalog.ChannelInput](w.t, body)
	return do(w, "put channel "+cid, func(ctx context.Context) (catalog.Channel, error) {
		return w.st.PutChannel(ctx, cid, in)
	})
}

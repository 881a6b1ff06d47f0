package octo

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogredis"
	"github.com/switchbackhq/switchback/internal/octowire"
	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
)

// The catalog side of the mapping (docs/decisions.md, "Selling through
// OCTO"): a bound product is an OCTO product, each of its rates the
// channel sees an option, each price of a rate a unit.

// product is what the OCTO endpoints read of a bound product: the
// reseller rendering and its rates, prices filtered by the binding.
type product struct {
	data  catalog.ProductData
	rates []catalog.RateData
}

func isNotFound(err error) bool {
	return err != nil && apierror.From(err).Code == apierror.NotFound
}

// fail maps an error of a dependency: NOT_FOUND becomes nf (an OCTO
// INVALID_* error), an *Error stays, anything else is passed on for the
// dialect to map.
func fail(err error, nf *Error) error {
	var oe *Error
	switch {
	case errors.As(err, &oe):
		return oe
	case nf != nil && isNotFound(err):
		return nf
	}
	return err
}

// visibleSupplier is the path's supplier when the channel sees it: a
// supplier not bound to the channel does not exist for it (FORBIDDEN:
// OCTO has no "not found" for its own endpoint, and an endpoint the key
// may not use is what FORBIDDEN names).
func (s *Service) visibleSupplier(r *httpapi.Request) (catalog.SupplierData, error) {
	sid := r.Param(pSupplier)
	raw, err := s.cat.AppendSupplier(r.Context(), nil, r.Principal.ChannelID, sid, catalogredis.SupplierV12, s.now())
	if err != nil {
		return catalog.SupplierData{}, fail(err, newError(ErrNameForbidden, "No supplier "+quote(sid)+" is sold on your channel"))
	}
	var sup catalog.SupplierData
	if err := json.Unmarshal(raw, &sup); err != nil {
		return catalog.SupplierData{}, internal(fmt.Errorf("decode supplier %s: %w", sid, err))
	}
	return sup, nil
}

func quote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return "'" + s + "'"
}

// loadProduct reads the bound product pid of supplier sid with its
// visible rates; a product not bound to the channel is INVALID_PRODUCT_ID.
func (s *Service) loadProduct(r *httpapi.Request, sid, pid string) (product, error) {
	if pid == "" {
		return product{}, invalidProduct(pid)
	}
	ctx, ch, now := r.Context(), r.Principal.ChannelID, s.now()
	raw, err := s.cat.AppendProduct(ctx, nil, ch, sid, pid, now)
	if err != nil {
		return product{}, fail(err, invalidProduct(pid))
	}
	var p product
	if err := json.Unmarshal(raw, &p.data); err != nil {
		return product{}, internal(fmt.Errorf("decode product %s: %w", pid, err))
	}
	raw, err = s.cat.AppendRates(ctx, nil, ch, sid, pid, now)
	if err != nil {
		return product{}, fail(err, invalidProduct(pid))
	}
	if err := json.Unmarshal(raw, &p.rates); err != nil {
		return product{}, internal(fmt.Errorf("decode rates of %s: %w", pid, err))
	}
	return p, nil
}

// rate is the option optionID of p, else INVALID_OPTION_ID.
func (p product) rate(optionID string) (catalog.RateData, error) {
	for _, r := range p.rates {
		if r.ID == optionID {
			return r, nil
		}
	}
	return catalog.RateData{}, invalidOption(optionID)
}

// location is the product's time zone (UTC when it names none or one
// this machine does not know).
func (p product) location() *time.Location {
	if p.data.TimeZone != "" {
		if loc, err := time.LoadLocation(p.data.TimeZone); err == nil {
			return loc
		}
	}
	return time.UTC
}

func (p product) timeZone() string {
	return p.location().String()
}

// supplier answers GET /supplier.
func (s *Service) supplier(r *httpapi.Request) error {
	sup, err := s.visibleSupplier(r)
	if err != nil {
		return err
	}
	out := octowire.Supplier{ID: sup.ID, Name: sup.Name, Endpoint: endpoint(r, sup.ID)}
	for _, c := range sup.Contacts {
		if c.Email != "" && out.Contact.Email == nil {
			out.Contact.Email = ptr(c.Email)
		}
		if c.Phone != "" && out.Contact.Telephone == nil {
			out.Contact.Telephone = ptr(c.Phone)
		}
	}
	return writeJSON(r, requested(r.Ctx), out)
}

// endpoint is the supplier's OCTO base URL as the client reached it.
func endpoint(r *httpapi.Request, sid string) string {
	scheme := "http"
	if r.Ctx.IsTLS() || strings.EqualFold(string(r.Ctx.Request.Header.Peek("X-Forwarded-Proto")), "https") {
		scheme = "https"
	}
	return scheme + "://" + string(r.Ctx.Host()) + Base + "/" + sid
}

func ptr[T any](v T) *T { return &v }

// products answers GET /products: every product of the supplier bound
// to the channel.
func (s *Service) products(r *httpapi.Request) error {
	sup, err := s.visibleSupplier(r)
	if err != nil {
		return err
	}
	raw, err := s.cat.AppendProducts(r.Context(), nil, r.Principal.ChannelID, sup.ID, s.now())
	if err != nil {
		return fail(err, nil)
	}
	var list []catalog.ProductData
	if err := json.Unmarshal(raw, &list); err != nil {
		return internal(fmt.Errorf("decode products: %w", err))
	}
	out := make([]octowire.Product, 0, len(list))
	for _, pd := range list {
		p, err := s.loadProduct(r, sup.ID, pd.ID)
		if err != nil {
			var oe *Error
			if errors.As(err, &oe) && oe.Name == ErrNameInvalidProductID {
				continue // unbound between the two reads
			}
			return err
		}
		out = append(out, octoProduct(p))
	}
	return writeJSON(r, requested(r.Ctx), out)
}

// product answers GET /products/{id}.
func (s *Service) product(r *httpapi.Request) error {
	sup, err := s.visibleSupplier(r)
	if err != nil {
		return err
	}
	p, err := s.loadProduct(r, sup.ID, r.Param("id"))
	if err != nil {
		return err
	}
	return writeJSON(r, requested(r.Ctx), octoProduct(p))
}

// OCTO's vocabulary of a product.
const (
	availabilityStartTime    = "START_TIME"
	availabilityOpeningHours = "OPENING_HOURS"
	deliveryTicket           = "TICKET"
	deliveryVoucher          = "VOUCHER"
)

// octoFormats are the delivery formats OCTO has, by the catalog's name
// (doc 3's QR_CODE is OCTO's QRCODE); the catalog's others (TEXT, EAN13,
// UPCA, CODE39) have no OCTO name and are left out.
var octoFormats = map[string]string{"QR_CODE": "QRCODE", "QRCODE": "QRCODE", "CODE128": "CODE128", "AZTECCODE": "AZTECCODE",
	"PDF_URL": "PDF_URL", "PKPASS_URL": "PKPASS_URL"}

func octoProduct(p product) octowire.Product {
	d := p.data
	out := octowire.Product{ID: d.ID, InternalName: d.Name, Locale: d.Locale, TimeZone: p.timeZone(),
		InstantConfirmation: d.InstantConfirmation, InstantDelivery: d.InstantDelivery, AvailabilityRequired: true,
		AvailabilityType: availabilityStartTime, DeliveryFormats: []string{}, DeliveryMethods: []string{}, RedemptionMethod: "DIGITAL",
		Options: make([]octowire.Option, 0, len(p.rates))}
	if d.Reference != "" {
		out.Reference = ptr(d.Reference)
	}
	if out.Locale == "" {
		out.Locale = "en"
	}
	if d.AvailabilityType == availabilityOpeningHours {
		out.AvailabilityType = availabilityOpeningHours
	}
	switch d.RedemptionMethod {
	case "DIGITAL", "PRINT", "MANIFEST":
		out.RedemptionMethod = d.RedemptionMethod
	}
	for _, f := range d.DeliveryFormats {
		if o, ok := octoFormats[f]; ok && !contains(out.DeliveryFormats, o) {
			out.DeliveryFormats = append(out.DeliveryFormats, o)
		}
	}
	for _, m := range d.DeliveryMethods {
		if (m == deliveryTicket || m == deliveryVoucher) && !contains(out.DeliveryMethods, m) {
			out.DeliveryMethods = append(out.DeliveryMethods, m)
		}
	}
	if len(out.DeliveryMethods) == 0 {
		out.DeliveryMethods = []string{deliveryVoucher} // every booking has the booking's own code
	}
	for i, r := range p.rates {
		out.Options = append(out.Options, octoOption(r, i == 0))
	}
	return out
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

func octoOption(r catalog.RateData, def bool) octowire.Option {
	name := r.Name
	if name == "" {
		name = r.ID
	}
	o := octowire.Option{ID: r.ID, Default: def, InternalName: name, AvailabilityLocalStartTimes: localStartTimes(r),
		RequiredContactFields: []string{}, Units: make([]octowire.Unit, 0, len(r.Prices))}
	if r.Code != "" {
		o.Reference = ptr(r.Code)
	}
	o.CancellationCutoffAmount, o.CancellationCutoffUnit = cutoff(r.Cutoff)
	o.CancellationCutoff = fmt.Sprintf("%d %s", o.CancellationCutoffAmount, o.CancellationCutoffUnit)
	if o.CancellationCutoffAmount != 1 {
		o.CancellationCutoff += "s"
	}
	if r.MinTravelers > 0 {
		o.Restrictions.MinUnits = ptr(r.MinTravelers)
	} else {
		o.Restrictions.MinUnits = ptr(0)
	}
	if r.MaxTravelers > 0 {
		o.Restrictions.MaxUnits = ptr(r.MaxTravelers)
	}
	for _, pr := range r.Prices {
		o.Units = append(o.Units, octoUnit(pr))
	}
	return o
}

// cutoff is the rate's cutoff (minutes) in OCTO's largest whole unit.
func cutoff(minutes int) (int, string) {
	switch {
	case minutes > 0 && minutes%1440 == 0:
		return minutes / 1440, "day"
	case minutes > 0 && minutes%60 == 0:
		return minutes / 60, "hour"
	}
	return max(minutes, 0), "minute"
}

// localStartTimes are the local start times of the rate's hours ("HH:MM",
// sorted); none when the rate states none (OCTO's field lists the times
// an option usually starts at, availability answers are exact).
func localStartTimes(r catalog.RateData) []string {
	out := []string{}
	for _, h := range r.Hours {
		for _, t := range h.Times {
			if len(t.Open) == 5 && !contains(out, t.Open) {
				out = append(out, t.Open)
			}
		}
	}
	slices.Sort(out)
	return out
}

// unitTypes are OCTO's unit types; the price's ageBand when it is one,
// else OTHER.
var unitTypes = map[string]bool{"ADULT": true, "YOUTH": true, "CHILD": true, "INFANT": true, "FAMILY": true, "SENIOR": true,
	"STUDENT": true, "MILITARY": true, "OTHER": true}

func octoUnit(pr catalog.Price) octowire.Unit {
	u := octowire.Unit{ID: pr.ID, InternalName: pr.Name, Type: "ADULT", RequiredContactFields: []string{},
		Restrictions: octowire.UnitRestrictions{MinAge: 0, MaxAge: 100, PaxCount: 1, AccompaniedBy: []string{}}}
	if u.InternalName == "" {
		u.InternalName = pr.ID
	}
	if tt := pr.TravelerType; tt != nil {
		band := strings.ToUpper(tt.AgeBand)
		switch {
		case unitTypes[band]:
			u.Type = band
		case band != "":
			u.Type = "OTHER"
		}
		if tt.MinAge != nil {
			u.Restrictions.MinAge = int(*tt.MinAge)
		}
		if tt.MaxAge != nil {
			u.Restrictions.MaxAge = int(*tt.MaxAge)
		}
		if u.InternalName == pr.ID && tt.Name != "" {
			u.InternalName = tt.Name
		}
	}
	return u
}

// unit is the unit unitID of rate r, else INVALID_UNIT_ID.
func unit(r catalog.RateData, unitID string) (octowire.Unit, error) {
	for _, pr := range r.Prices {
		if pr.ID == unitID {
			return octoUnit(pr), nil
		}
	}
	return octowire.Unit{}, invalidUnit(unitID)
}

package bookingsync

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/catalog"
)

// DefaultHoldablePeriod is the holdablePeriod (seconds) of a booking-system
// rate whose operator set none: the hold Switchback asks the booking
// system for (ingest/supplierbooking.DefaultHoldMinutes, 15 minutes).
// Neither doc 3 nor OCTO states a hold length per option: the caller asks
// for one (holdExpirationMinutes, OCTO's expirationMinutes).
const DefaultHoldablePeriod = 15 * 60

// Capabilities are the capabilities the synchronization asks a booking
// system for when it reads products: OCTO's pricing (prices on the units,
// pricingFrom), in the Octo-Capabilities header of an OCTO system and the
// X-Capabilities header of a v2 one (doc 3: "comma-delimited list of
// wanted capabilities"; the nested fields take OCTO's names).
var Capabilities = []string{"octo/pricing"}

// MergeRate is the rate to write for option o of product bp, a product
// the booking system returned, given the stored rate (nil: new). The terms
// of sale are derived from what the booking system says of the option
// (docs/decisions.md, "Rates, holds and bookings of booking-system
// suppliers", the field-by-field mapping):
//
//   - holdable: true (a hold is createBooking ON_HOLD, doc 3; OCTO's
//     reservation); holdablePeriod: the operator's when set, else
//     DefaultHoldablePeriod (the booking system states none);
//   - cancelable true with cutoff the cancellation cutoff in minutes
//     (cancellationCutoffAmount × cancellationCutoffUnit); without one, 0
//     (doc 3 lists CONFIRMED → CANCELLED; whether a booking can be
//     cancelled now is its own cancellable);
//   - minTravelers: restrictions.minUnits, at least 1 (a booking of no
//     unit is none); maxTravelers: restrictions.maxUnits, 0 (no maximum)
//     when null or absent;
//   - prices: the booking system's pricing (units' pricingFrom, or the
//     option's for pricingPer BOOKING; UnitPrices) when it sends any, else
//     the operator's.
//
// Everything else (name, title, code, partnerId, ext, hours, valid, type,
// refundable: neither standard states a refund per option) is the
// operator's, kept from the stored rate; a new rate is named
// PlaceholderName. The version given is the stored one (0 for a new
// rate), so an operator's write meanwhile is a conflict, never silently
// overwritten.
func MergeRate(bp bookingsystem.Product, o bookingsystem.Option, cur *catalog.Rate) catalog.RateInput {
	var d catalog.RateData
	var version int64
	if cur != nil {
		d, version = cur.RateData, cur.Version
		d.Prices = slices.Clone(d.Prices)
	} else {
		d.ID, d.Name, d.Prices = o.ID, PlaceholderName("Option", o.ID, o.InternalName), []catalog.Price{}
	}
	d.OptionID = o.ID // doc 3's options are our rates
	d.Holdable = true
	if d.HoldablePeriod <= 0 {
		d.HoldablePeriod = DefaultHoldablePeriod
	}
	d.Cancelable, d.Cutoff = true, 0
	if m, ok := o.CutoffMinutes(); ok && m > 0 {
		d.Cutoff = m
	}
	d.MinTravelers, d.MaxTravelers = 1, 0
	if r := o.Restrictions; r != nil {
		if r.MinUnits != nil && *r.MinUnits > 1 {
			d.MinTravelers = *r.MinUnits
		}
		if r.MaxUnits != nil && *r.MaxUnits > 0 {
			d.MaxTravelers = max(*r.MaxUnits, d.MinTravelers)
		}
	}
	if ps := UnitPrices(bp, o); len(ps) > 0 {
		d.Prices = ps
	}
	return catalog.RateInput{RateData: d, Version: &version}
}

// sameTerms reports whether the stored rate already is in (nothing to
// write).
func sameTerms(in catalog.RateInput, cur catalog.Rate) bool {
	a, err1 := json.Marshal(in.RateData)
	b, err2 := json.Marshal(cur.RateData)
	return err1 == nil && err2 == nil && string(a) == string(b)
}

// UnitPrices are the catalog prices of option o from the booking system's
// pricing (OCTO's octo/pricing capability, read in both dialects): with
// pricingPer UNIT (or none), one Price per unit and currency of the
// units' pricingFrom, with the unit's traveler type; with pricingPer
// BOOKING, one per currency of the option's pricingFrom, id "booking". A
// price is:
//
//   - id: the unitId, as the price schedule's prices (ScheduleEntry), and
//     what a hold's priceId names to pick the unit (supplierbooking);
//     unitId~CUR for each price of a unit priced in several currencies;
//   - name: the unit's title (octo/content) or its type in words
//     ("Adult"); travelerType {ageBand: the unit type (OCTO's ADULT,
//     YOUTH, CHILD, INFANT, FAMILY, SENIOR, STUDENT, MILITARY, OTHER), minAge
//     and maxAge of its restrictions, name};
//   - retail, net, original: Money of the integer minor units divided by
//     10^currencyPrecision; includedTaxes each with name, retail and net.
//
// A unit id that cannot be a price id, a unit whose id another unit
// repeats (the second), or a negative amount is left out.
func UnitPrices(bp bookingsystem.Product, o bookingsystem.Option) []catalog.Price {
	var out []catalog.Price
	if bp.PricingPer == bookingsystem.PricingPerBooking {
		for _, p := range o.PricingFrom {
			id := "booking"
			if len(o.PricingFrom) > 1 {
				id += "~" + p.Currency
			}
			if pr, ok := price(id, "Booking", nil, p); ok {
				out = append(out, pr)
			}
		}
		return out
	}
	seen := map[string]bool{}
	for _, u := range o.Units {
		if seen[u.ID] || len(u.PricingFrom) == 0 {
			continue
		}
		seen[u.ID] = true
		name := unitName(u)
		tt := &catalog.PriceTravelerType{AgeBand: u.Type, Name: name}
		if r := u.Restrictions; r != nil {
			tt.MinAge, tt.MaxAge = age(r.MinAge), age(r.MaxAge)
			if tt.MinAge != nil && tt.MaxAge != nil && *tt.MaxAge < *tt.MinAge {
				tt.MinAge, tt.MaxAge = nil, nil
			}
		}
		for _, p := range u.PricingFrom {
			id := u.ID
			if len(u.PricingFrom) > 1 {
				id += "~" + p.Currency
			}
			if pr, ok := price(id, name, tt, p); ok {
				out = append(out, pr)
			}
		}
	}
	return out
}

// price is one catalog price of OCTO pricing p.
func price(id, name string, tt *catalog.PriceTravelerType, p bookingsystem.Pricing) (catalog.Price, bool) {
	if !catalog.ValidID(id) || p.Retail < 0 || (p.Net != nil && *p.Net < 0) || p.CurrencyPrecision < 0 || p.CurrencyPrecision > 8 {
		return catalog.Price{}, false
	}
	out := catalog.Price{ID: id, Name: name, TravelerType: tt, Retail: money(p.Retail, p.CurrencyPrecision, p.Currency)}
	if p.Net != nil {
		out.Net = money(*p.Net, p.CurrencyPrecision, p.Currency)
	}
	if p.Original != nil && *p.Original >= 0 {
		out.Original = money(*p.Original, p.CurrencyPrecision, p.Currency)
	}
	for _, t := range p.IncludedTaxes {
		x := catalog.IncludedTax{Currency: p.Currency, Name: t.Name, Retail: money(t.Retail, p.CurrencyPrecision, p.Currency).Amount}
		if t.Net != nil {
			x.Net = money(*t.Net, p.CurrencyPrecision, p.Currency).Amount
		}
		out.IncludedTaxes = append(out.IncludedTaxes, x)
	}
	return out, true
}

// unitName is what resellers may show of a unit: its title (octo/content),
// else its type in words ("Adult"), else its id. Never the internalName
// (doc 3: not for customers).
func unitName(u bookingsystem.Unit) string {
	switch {
	case u.Title != nil && strings.TrimSpace(*u.Title) != "":
		return *u.Title
	case u.Type != "":
		t := strings.ToLower(u.Type)
		return strings.ToUpper(t[:1]) + t[1:]
	}
	return u.ID
}

func age(v *int) *int32 {
	if v == nil || *v < 0 || *v > 200 {
		return nil
	}
	a := int32(*v)
	return &a
}

// optionRef names an option in error texts: supplier, product and option
// ids ("S1/P1/DEFAULT"; OCTO products often all have an option DEFAULT).
// Catalog ids have no '/', so the reference is unambiguous, and it reads
// as one id in a cron report's errorReport (cronreport.ParseError).
func optionRef(sid, pid, oid string) string { return sid + "/" + pid + "/" + oid }

// productRef names a product in error texts ("S1/P1").
func productRef(sid, pid string) string { return sid + "/" + pid }

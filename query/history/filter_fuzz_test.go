package history

import (
	"errors"
	"net/url"
	"testing"

	"github.com/switchbackhq/switchback/query/apierror"
)

// FuzzParseAvailabilityFilter: the query string of the availability
// history read is either a filter with a supplier, paging within bounds
// and a non-empty range, or an INVALID_FIELD naming a parameter; never a
// panic.
func FuzzParseAvailabilityFilter(f *testing.F) {
	for _, s := range []string{"", "supplierId=s1", "supplierId=s1&productId=p1&limit=10&offset=20", "supplierId=s&from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z",
		"supplierId=s&limit=0", "supplierId=s&from=2026-03-01T00:00:00 01:00", "productId=p"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if _, err := url.ParseQuery(raw); err != nil {
			t.Skip()
		}
		fl, err := parseAvailabilityFilter(argsOf(raw))
		if err != nil {
			var ae *apierror.Error
			if !errors.As(err, &ae) || ae.Code != apierror.InvalidField || ae.Data["field"] == "" {
				t.Fatalf("%q: refusal %v names no parameter", raw, err)
			}
			return
		}
		if fl.supplierID == "" || fl.limit < 1 || fl.limit > MaxLimit || fl.offset < 0 || fl.offset > MaxOffset {
			t.Fatalf("%q: out of bounds: %+v", raw, fl)
		}
		if !fl.from.IsZero() && !fl.to.IsZero() && !fl.from.Before(fl.to) {
			t.Fatalf("%q: empty range accepted: %+v", raw, fl)
		}
	})
}

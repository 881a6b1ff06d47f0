package historyapi

import (
	"errors"
	"net/url"
	"testing"
	"time"

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

// FuzzParseStatsFilter: the query string of the console's delivery stats
// is either a range of whole minutes at most a day long, or an
// INVALID_FIELD naming a parameter; never a panic.
func FuzzParseStatsFilter(f *testing.F) {
	for _, s := range []string{"", "type=booking", "from=2026-03-01T00:00:00Z&to=2026-03-01T01:00:30Z", "from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z",
		"from=2026-03-01T00:00:00 01:00", "from=1970-01-01T00:00:00Z", "to=2105-12-31T23:59:59Z"} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 10, 12, 30, 20, 0, time.UTC)
	f.Fuzz(func(t *testing.T, raw string) {
		if _, err := url.ParseQuery(raw); err != nil {
			t.Skip()
		}
		fl, err := parseStatsFilter(argsOf(raw), now)
		if err != nil {
			var ae *apierror.Error
			if !errors.As(err, &ae) || ae.Code != apierror.InvalidField || ae.Data["field"] == "" {
				t.Fatalf("%q: refusal %v names no parameter", raw, err)
			}
			return
		}
		span := fl.to.Sub(fl.from)
		if span <= 0 || span > MaxStatsSpan || span%StatsStep != 0 || !fl.from.Equal(fl.from.Truncate(StatsStep)) {
			t.Fatalf("%q: range %v .. %v is not whole minutes within a day", raw, fl.from, fl.to)
		}
	})
}

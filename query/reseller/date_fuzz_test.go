package reseller

import (
	"errors"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/query/apierror"
)

// FuzzParseDate: a reseller's date parameter of the price schedule reads
// (YYYY-MM-DD, or an RFC 3339 time whose UTC date is taken) is either a
// UTC midnight or an INVALID_FIELD naming the parameter; empty is no date.
// Never a panic.
func FuzzParseDate(f *testing.F) {
	for _, s := range []string{"", "2026-11-24", "2026-11-24T23:30:00-05:00", "2026-02-30", "24/11/2026", "2026-11-24T00:00:00Z junk", "9999-12-31T23:59:59+14:00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, err := parseDate("from", v)
		if err != nil {
			var ae *apierror.Error
			if !errors.As(err, &ae) || ae.Code != apierror.InvalidField || ae.Data["field"] != "from" {
				t.Fatalf("%q: refusal %v does not name the parameter", v, err)
			}
			return
		}
		if v == "" {
			if !d.IsZero() {
				t.Fatalf("empty parameter gave %v", d)
			}
			return
		}
		if d.Location() != time.UTC || d.Hour() != 0 || d.Minute() != 0 || d.Second() != 0 || d.Nanosecond() != 0 {
			t.Fatalf("%q gave %v, not a UTC midnight", v, d)
		}
	})
}

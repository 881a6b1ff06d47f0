package catalog

import (
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/bounds"
)

// FuzzAvailabilityOK: the allocation-free check of a valid availability
// agrees with the one that names what is wrong, so that every refusal
// still names its field and nothing invalid passes.
func FuzzAvailabilityOK(f *testing.F) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	day := int64(24 * time.Hour / time.Second)
	f.Add("a1", now.Unix()+day, now.Unix()+day+3600, 5, 7, true, 0)
	f.Add("", now.Unix()+day, now.Unix()+day+3600, 5, 0, false, 0)
	f.Add("a b", now.Unix(), now.Unix()-1, -1, 3, true, 300)
	f.Add("a1", int64(-62135596800), now.Unix(), 0, 0, false, 0) // the zero time
	f.Add("a1", now.Add(-bounds.Past).Unix(), now.Add(bounds.Future).Unix(), bounds.MaxCapacity, bounds.MaxCapacity, true, MaxIDLen)
	f.Add("a1", now.Add(-bounds.Past).Unix()-1, now.Add(bounds.Future).Unix()+1, bounds.MaxCapacity+1, bounds.MaxCapacity+1, true, MaxIDLen+1)
	f.Fuzz(func(t *testing.T, id string, start, end int64, capacity, maxCapacity int, hasMax bool, systemIDLen int) {
		a := Availability{ID: id, Start: time.Unix(start, 0).UTC(), End: time.Unix(end, 0).UTC(), Capacity: capacity,
			SystemID: strings.Repeat("s", min(max(systemIDLen, 0), 2*MaxIDLen))}
		if hasMax {
			a.MaxCapacity = &maxCapacity
		}
		from, until := bounds.Window(now)
		ok := availabilityOK(&a, from, until)
		err := availabilityError(0, &a, now, false)
		if ok != (err == nil) {
			t.Fatalf("%+v: availabilityOK %v, availabilityError %v", a, ok, err)
		}
	})
}

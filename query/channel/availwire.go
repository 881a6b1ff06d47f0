package channel

import (
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/jsonwire"
)

// decodeAvailabilities reads PUT .../availabilities's body in one pass
// when it is plain: {"availabilities":[{...}]} with each availability's
// members spelt as the spec spells them, each at most once, strings
// without escapes, integer capacities, RFC 3339 times. Anything else
// (other keys, other spellings, null, escapes, errors) is not ok, and the
// caller decodes with encoding/json, which then has the last word: the
// error object, or the value. It is the operators' hot write (thousands a
// second), and encoding/json's reflection was a third of the handler's
// time. FuzzDecodeAvailabilities holds the two to the same value.
func decodeAvailabilities(body []byte) ([]catalog.Availability, bool) {
	r := jsonwire.NewReader(body)
	var out []catalog.Availability
	seen := false
	ok := r.Object(func(k []byte) bool {
		if string(k) != "availabilities" || seen || r.Peek() != '[' {
			return false
		}
		seen = true
		out = make([]catalog.Availability, 0, 8)
		return r.Array(func() bool {
			a, ok := decodeAvailability(r)
			out = append(out, a)
			return ok
		})
	})
	if !ok || !seen || !r.End() {
		return nil, false
	}
	return out, true
}

// decodeAvailability reads one availability object for decodeAvailabilities.
func decodeAvailability(r *jsonwire.Reader) (catalog.Availability, bool) {
	var a catalog.Availability
	var seen uint8
	ok := r.Object(func(k []byte) bool {
		var bit uint8
		switch string(k) {
		case "id":
			bit = 1
			a.ID, _ = r.Str()
		case "start":
			bit = 2
			a.Start = r.Time()
		case "end":
			bit = 4
			a.End = r.Time()
		case "capacity":
			bit = 8
			a.Capacity = int(r.Int())
		case "maxCapacity":
			bit = 16
			v := int(r.Int())
			a.MaxCapacity = &v
		case "systemId":
			bit = 32
			a.SystemID, _ = r.Str()
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return r.OK()
	})
	return a, ok
}

package bookingsystem

import (
	"strings"

	"github.com/switchbackhq/switchback/internal/platform/jsonwire"
)

// decodeV2AvailabilityFast reads a v2 availability answer in one pass
// (jsonwire.Reader) instead of encoding/json's two (the array of raw items,
// then each item): a full synchronization reads hundreds of thousands of
// availabilities, and this was most of its CPU. It accepts only the plain
// shape booking systems send (an array of objects of doc 3's fields,
// strings without escapes, integer vacancies, no nulls); anything else
// (a malformed item included, whose problem the slow path words) answers
// ok=false, and decodeItems reads the answer instead. FuzzParseAvailability
// checks that both agree whenever this one accepts.
func decodeV2AvailabilityFast(body []byte) (items []v2Availability, idx []int, ok bool) {
	if len(body) > MaxResponseBytes {
		return nil, nil, false
	}
	r := jsonwire.NewReader(body)
	items = make([]v2Availability, 0, strings.Count(string(body), `"optionId"`))
	ok = r.Array(func() bool {
		var a v2Availability
		ok := r.Object(func(key []byte) bool {
			switch string(key) {
			case "id":
				a.ID, _ = r.Str()
			case "optionId":
				a.OptionID, _ = r.Str()
			case "localDateTimeStart":
				a.LocalDateTimeStart = r.Time()
			case "localDateTimeEnd":
				a.LocalDateTimeEnd = r.Time()
			case "status":
				a.Status, _ = r.Str()
			case "vacancies":
				if a.Vacancies != nil {
					return false // a repeated key: leave it to encoding/json
				}
				v := int(r.Int())
				a.Vacancies = &v
			case "available":
				if a.Available != nil {
					return false
				}
				v := r.Bool()
				a.Available = &v
			default:
				return r.Unknown(key, "id", "optionId", "localDateTimeStart", "localDateTimeEnd", "status", "vacancies", "available")
			}
			return r.OK()
		})
		if !ok {
			return false
		}
		idx = append(idx, len(items))
		items = append(items, a)
		return true
	})
	if !ok || !r.End() {
		return nil, nil, false
	}
	return items, idx, true
}

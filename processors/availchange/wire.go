package availchange

import (
	"bytes"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/jsonwire"
	"github.com/switchbackhq/switchback/schemas"
)

// decodeSnapshotFast decodes a partner snapshot record without
// encoding/json's reflection and its two validating scans (envelope, then
// data): at 50k snapshots/s those were most of the processor's CPU. It
// accepts only the plain shape the producer writes: ASCII strings without
// escapes, integers, known keys in their exact case, no nulls. Anything
// else (another event type included) answers ok=false, and decode takes
// the encoding/json path, which then has the last word; FuzzDecode checks
// that both agree whenever this one accepts.
func decodeSnapshotFast(value []byte) (input, bool) {
	r := jsonwire.NewReader(value)
	var env schemas.Envelope
	var data []byte
	ok := r.Object(func(key []byte) bool {
		switch string(key) {
		case "id":
			env.ID, _ = r.Str()
		case "type":
			env.Type, _ = r.Str()
		case "key":
			env.Key, _ = r.Str()
		case "source":
			env.Source, _ = r.Str()
		case "version":
			env.Version = r.Int()
		case "time":
			env.Time = r.Time()
		case "deleted":
			env.Deleted = r.Bool()
		case "data":
			start := r.Pos()
			r.Skip()
			data = value[start:r.Pos()]
		default:
			return r.Unknown(key, "id", "type", "key", "source", "version", "time", "deleted", "data")
		}
		return r.OK()
	})
	if !ok || !r.End() || env.Type != schemas.SnapshotEventType || data == nil {
		return input{}, false
	}
	env.Data = data
	var s snapshotWire
	d := jsonwire.NewReader(data)
	seenSlots := false
	ok = d.Object(func(key []byte) bool {
		switch string(key) {
		case "supplierId":
			s.sid, _ = d.Str()
		case "productId":
			s.pid, _ = d.Str()
		case "rateId":
			s.rid, _ = d.Str()
		case "start":
			s.start = d.Time()
		case "end":
			s.end = d.Time()
		case "retrieved":
			s.retrieved = d.Time()
		case "expires":
			d.Time() // not used; checked as encoding/json would
		case "availabilities":
			if seenSlots {
				return false // encoding/json's reuse of the slice: leave it to it
			}
			seenSlots = true
			if d.Null() {
				return true
			}
			s.slots = make([]Slot, 0, bytes.Count(data[d.Pos():], []byte(`"capacity"`)))
			return d.Array(func() bool {
				var a Slot
				ok := d.Object(func(key []byte) bool {
					switch string(key) {
					case "start":
						a.Start = d.Time()
					case "end":
						a.End = d.Time()
					case "capacity":
						a.Vacancies = int(d.Int())
					case "id":
						d.Str() // not used; checked as encoding/json would
					case "maxCapacity":
						if !d.Null() {
							d.Int()
						}
					default:
						return d.Unknown(key, "id", "start", "end", "capacity", "maxCapacity")
					}
					return d.OK()
				})
				s.slots = append(s.slots, Slot{Start: a.Start.UTC(), End: a.End.UTC(), Vacancies: a.Vacancies})
				return ok
			})
		default:
			return d.Unknown(key, "supplierId", "productId", "rateId", "start", "end", "retrieved", "expires", "availabilities")
		}
		return d.OK()
	})
	if !ok || !d.End() {
		return input{}, false
	}
	if s.sid == "" || s.pid == "" || s.rid == "" || !s.start.Before(s.end) {
		return input{}, false // the slow path words the error
	}
	return input{env: env, sid: s.sid, pid: s.pid, rid: s.rid, scope: Span{From: s.start.UTC(), To: s.end.UTC()},
		source: "partner", version: s.retrieved.UnixNano(), slots: s.slots}, true
}

// decodePushFast decodes an operator's push (a catalog availability
// event, catalog.availability.upserted) in one pass, as decodeSnapshotFast
// does a snapshot, with the checks catalog.DecodeEvent makes of it; any
// other record, or an unusual one, answers ok=false and takes decodeJSON.
// FuzzDecode checks both paths agree whenever this one accepts.
func decodePushFast(value []byte) (input, bool) {
	r := jsonwire.NewReader(value)
	var env schemas.Envelope
	var data []byte
	seenTime := false
	ok := r.Object(func(key []byte) bool {
		switch string(key) {
		case "id":
			env.ID, _ = r.Str()
		case "type":
			env.Type, _ = r.Str()
		case "key":
			env.Key, _ = r.Str()
		case "source":
			env.Source, _ = r.Str()
		case "version":
			env.Version = r.Int()
		case "time":
			if seenTime {
				return false
			}
			seenTime = true
			env.Time = r.Time()
		case "data":
			if data != nil {
				return false
			}
			data = r.Raw()
		default:
			return false // deleted included: a push is never a deletion
		}
		return r.OK()
	})
	pushType := schemas.CatalogEventType(schemas.CatalogKindAvailability, false)
	if !ok || !r.End() || env.Type != pushType || env.Version <= 0 || data == nil {
		return input{}, false
	}
	env.Data = data
	d := jsonwire.NewReader(data)
	var kind, sid, pid, rid, setSid, setPid, setRid string
	var setVersion int64
	var slots []Slot
	seenSet, seenSlots := false, false
	ok = d.Object(func(key []byte) bool {
		switch string(key) {
		case "kind":
			kind, _ = d.Str()
		case "supplierId":
			sid, _ = d.Str()
		case "productId":
			pid, _ = d.Str()
		case "rateId":
			rid, _ = d.Str()
		case "availability":
			if seenSet {
				return false
			}
			seenSet = true
			return d.Object(func(key []byte) bool {
				switch string(key) {
				case "supplierId":
					setSid, _ = d.Str()
				case "productId":
					setPid, _ = d.Str()
				case "rateId":
					setRid, _ = d.Str()
				case "version":
					setVersion = d.Int()
				case "availabilities":
					if seenSlots || d.Peek() != '[' {
						return false
					}
					seenSlots = true
					slots = make([]Slot, 0, bytes.Count(data[d.Pos():], []byte(`"capacity"`)))
					return d.Array(func() bool {
						var a Slot
						ok := d.Object(func(key []byte) bool {
							switch string(key) {
							case "id":
								d.Str()
							case "start":
								a.Start = d.Time()
							case "end":
								a.End = d.Time()
							case "capacity":
								a.Vacancies = int(d.Int())
							case "maxCapacity":
								d.Int()
							default:
								return false
							}
							return d.OK()
						})
						slots = append(slots, Slot{Start: a.Start.UTC(), End: a.End.UTC(), Vacancies: a.Vacancies})
						return ok
					})
				default:
					return false
				}
				return d.OK()
			})
		default:
			return false
		}
		return d.OK()
	})
	if !ok || !d.End() || !seenSet || kind != string(schemas.CatalogKindAvailability) {
		return input{}, false
	}
	if !catalog.ValidID(sid) || !catalog.ValidID(pid) || !catalog.ValidID(rid) ||
		setSid != sid || setPid != pid || setRid != rid || setVersion != env.Version || env.Key != sid+"/"+pid+"/"+rid {
		return input{}, false
	}
	if len(slots) == 0 {
		slots = nil // as the encoding/json path leaves it
	}
	return input{env: env, sid: sid, pid: pid, rid: rid, scope: Everything, source: "push", version: env.Version, slots: slots}, true
}

type snapshotWire struct {
	sid, pid, rid         string
	start, end, retrieved time.Time
	slots                 []Slot
}

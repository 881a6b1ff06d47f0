package availchange

import (
	"bytes"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/jsonwire"
	"github.com/switchbackhq/switchback/schemas"
)

// decodeFast decodes the processor's two inputs, a partner snapshot and an
// operator's push, without encoding/json's reflection and its two
// validating scans (envelope, then data): at 50k snapshots/s those were
// most of the processor's CPU. The envelope is read once
// (schemas.ReadEnvelope), the payload by its type. It accepts only the
// plain shape the producers write: ASCII strings without escapes,
// integers, known keys in their exact case, no nulls where encoding/json
// would keep one. Anything else (another event type included) answers
// ok=false, and decode takes the encoding/json path, which then has the
// last word; FuzzDecode checks that both agree whenever this one accepts.
func decodeFast(value []byte) (input, bool) {
	env, ok := schemas.ReadEnvelope(value)
	if !ok || env.Data == nil {
		return input{}, false
	}
	switch env.Type {
	case schemas.SnapshotEventType:
		return decodeSnapshotFast(env)
	case pushType:
		return decodePushFast(env)
	}
	return input{}, false
}

// pushType is the event type of an operator's availability push.
var pushType = schemas.CatalogEventType(schemas.CatalogKindAvailability, false)

// decodeSnapshotFast reads a partner snapshot's payload (schemas.Snapshot)
// with the checks decodeJSON makes of it.
func decodeSnapshotFast(env schemas.Envelope) (input, bool) {
	var s snapshotWire
	d := jsonwire.NewReader(env.Data)
	seenSlots := false
	ok := d.Object(func(key []byte) bool {
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
			var ok bool
			s.slots, ok = readSlots(d, env.Data, false)
			return ok
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
	if len(s.slots) == 0 {
		s.slots = nil // as the encoding/json path leaves an empty array
	}
	return input{env: env, sid: s.sid, pid: s.pid, rid: s.rid, scope: Span{From: s.start.UTC(), To: s.end.UTC()},
		source: "partner", version: s.retrieved.UnixNano(), slots: s.slots}, true
}

// readSlots reads an array of availability slots (the spec's
// availability objects: id, start, end, capacity, maxCapacity, and the
// booking system's systemId) at d, sized
// by the count of "capacity" keys in data. strict refuses what a push
// never holds (a null maxCapacity, another key); a snapshot's slots skip
// unknown keys as encoding/json does.
func readSlots(d *jsonwire.Reader, data []byte, strict bool) ([]Slot, bool) {
	slots := make([]Slot, 0, bytes.Count(data[d.Pos():], []byte(`"capacity"`)))
	ok := d.Array(func() bool {
		var a Slot
		ok := d.Object(func(key []byte) bool {
			switch string(key) {
			case "id":
				d.Str() // not used; checked as encoding/json would
			case "start":
				a.Start = d.Time()
			case "end":
				a.End = d.Time()
			case "capacity":
				a.Vacancies = int(d.Int())
			case "maxCapacity":
				if strict || !d.Null() {
					d.Int()
				}
			case "systemId":
				// A push's slot from a booking system carries the
				// system's own id (catalog.Availability.SystemID): not
				// used. A snapshot's slot has no such field.
				if !strict {
					return d.Unknown(key, "id", "start", "end", "capacity", "maxCapacity")
				}
				d.Str()
			default:
				return !strict && d.Unknown(key, "id", "start", "end", "capacity", "maxCapacity")
			}
			return d.OK()
		})
		slots = append(slots, Slot{Start: a.Start.UTC(), End: a.End.UTC(), Vacancies: a.Vacancies})
		return ok
	})
	return slots, ok
}

// decodePushFast reads an operator's push (a catalog availability event,
// catalog.availability.upserted) with the checks catalog.DecodeEvent
// makes of it.
func decodePushFast(env schemas.Envelope) (input, bool) {
	if env.Version <= 0 || env.Deleted {
		return input{}, false // a push is never a deletion
	}
	d := jsonwire.NewReader(env.Data)
	var kind, sid, pid, rid, setSid, setPid, setRid string
	var setVersion int64
	var slots []Slot
	seenSet, seenSlots := false, false
	ok := d.Object(func(key []byte) bool {
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
					var ok bool
					slots, ok = readSlots(d, env.Data, true)
					return ok
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

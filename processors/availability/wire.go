package availability

import (
	"bytes"
	"time"

	"github.com/switchbackhq/switchback/internal/jsonwire"
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
	if !ok || !r.End() || env.Type != SnapshotEventType || data == nil {
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
					default:
						return d.Unknown(key, "start", "end", "capacity")
					}
					return d.OK()
				})
				s.slots = append(s.slots, Slot{Start: a.Start.UTC(), End: a.End.UTC(), Vacancies: a.Vacancies})
				return ok
			})
		default:
			return d.Unknown(key, "supplierId", "productId", "rateId", "start", "end", "retrieved", "availabilities")
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

type snapshotWire struct {
	sid, pid, rid         string
	start, end, retrieved time.Time
	slots                 []Slot
}

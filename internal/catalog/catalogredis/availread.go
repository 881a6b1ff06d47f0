package catalogredis

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/jsonwire"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// Availability events are re-applied by processors/catalogchange at the rate
// operators push them (thousands a second), and decoding each set's
// hundreds of slots only to encode them again for Redis was most of that
// consumer's CPU. availRecordFast reads such a record in one pass without
// decoding the slots (they are checked for grammar and kept as bytes);
// a record it does not take goes through DecodeMessage and DecodeEvent,
// which have the last word (FuzzAvailRecordFast holds the two equal).

// RecordType is the envelope type of a catalog record, read without
// decoding the rest ("" when the record is not a plain envelope).
func RecordType(value []byte) string {
	r := jsonwire.NewReader(value)
	typ := ""
	r.Object(func(key []byte) bool {
		if string(key) == "type" {
			typ, _ = r.Str()
			return false // found: stop reading
		}
		r.Skip()
		return r.OK()
	})
	return typ
}

// availRecord is what applying an availability event needs.
type availRecord struct {
	sid, pid, rid string
	version       int64
	at            time.Time
	set           []byte // the AvailabilitySet JSON, as published
}

func availRecordFast(value []byte) (availRecord, bool) {
	r := jsonwire.NewReader(value)
	var (
		rec                availRecord
		typ, key, id       string
		data               []byte
		seenData, seenTime bool
	)
	ok := r.Object(func(k []byte) bool {
		switch string(k) {
		case "id":
			id, _ = r.Str()
		case "type":
			typ, _ = r.Str()
		case "key":
			key, _ = r.Str()
		case "version":
			rec.version = r.Int()
		case "time":
			if seenTime {
				return false
			}
			seenTime = true
			rec.at = r.Time()
		case "source":
			r.Str()
		case "data":
			if seenData {
				return false
			}
			seenData = true
			data = r.Raw()
		default:
			// deleted (an availability set is never deleted) included.
			return false
		}
		return r.OK()
	})
	if !ok || !r.End() || id == "" || typ != schemas.CatalogEventType(schemas.CatalogKindAvailability, false) || rec.version <= 0 || data == nil || data[0] != '{' {
		return availRecord{}, false
	}
	d := jsonwire.NewReader(data)
	var kind, sid, pid, rid string
	var setSid, setPid, setRid string
	var setVersion int64
	seenSet := false
	ok = d.Object(func(k []byte) bool {
		switch string(k) {
		case "kind":
			kind, _ = d.Str()
		case "supplierId":
			sid, _ = d.Str()
		case "productId":
			pid, _ = d.Str()
		case "rateId":
			rid, _ = d.Str()
		case "availability":
			if seenSet || d.Peek() != '{' {
				return false
			}
			seenSet = true
			start := d.Pos()
			d.Skip()
			if !d.OK() {
				return false
			}
			rec.set = data[start:d.Pos()]
			var okSet bool
			setSid, setPid, setRid, setVersion, okSet = setHeadFast(rec.set)
			return okSet
		default:
			return false // anything else of an Event is not an availability event's
		}
		return d.OK()
	})
	if !ok || !d.End() || kind != string(schemas.CatalogKindAvailability) || !seenSet {
		return availRecord{}, false
	}
	if !catalog.ValidID(sid) || !catalog.ValidID(pid) || !catalog.ValidID(rid) || setSid != sid || setPid != pid || setRid != rid ||
		setVersion != rec.version || key != sid+"/"+pid+"/"+rid || bytes.ContainsAny(rec.set, " \t\r\n") {
		return availRecord{}, false
	}
	rec.sid, rec.pid, rec.rid = sid, pid, rid
	return rec, true
}

// ApplyRecords materializes catalog records with one Redis pipeline, in
// their order: availability events by the fast path above, any other
// through DecodeMessage and DecodeEvent. A record that is not a catalog
// event (another stage's snapshot, a tombstone) is skipped (applied
// false). An unusable event is ErrInvalidEvent, and nothing of the batch
// is applied then.
func (s *Store) ApplyRecords(ctx context.Context, msgs []stream.Message) ([]bool, error) {
	calls := make([]scriptCall, 0, len(msgs))
	pos := make([]int, 0, len(msgs))
	for i, m := range msgs {
		if rec, ok := availRecordFast(m.Value); ok {
			vv, t := versionArgs(rec.version, rec.at)
			calls = append(calls, scriptCall{applyFieldScript, []string{s.k.versions(rec.sid), s.k.avail(rec.sid, rec.pid)},
				[]any{verAvail(rec.pid, rec.rid), vv, t, "0", rec.rid, rec.set}})
			pos = append(pos, i)
			continue
		}
		env, ok, err := DecodeMessage(m)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		ev, err := catalog.DecodeEvent(env)
		if err != nil {
			return nil, err
		}
		c, err := s.applyCall(env, &ev)
		if err != nil {
			return nil, err
		}
		calls = append(calls, c)
		pos = append(pos, i)
	}
	applied := make([]bool, len(msgs))
	ok, err := s.runCalls(ctx, calls)
	for k, i := range pos {
		if k < len(ok) {
			applied[i] = ok[k]
		}
	}
	if err != nil {
		return applied, fmt.Errorf("apply %d catalog records: %w", len(calls), err)
	}
	return applied, nil
}

// setHeadFast reads an AvailabilitySet's ids and version without decoding
// its slots (checked for grammar only); ok false: decode it whole.
func setHeadFast(raw []byte) (sid, pid, rid string, version int64, ok bool) {
	set := jsonwire.NewReader(raw)
	seen := map[string]bool{}
	ok = set.Object(func(k []byte) bool {
		if seen[string(k)] {
			return false
		}
		seen[string(k)] = true
		switch string(k) {
		case "supplierId":
			sid, _ = set.Str()
		case "productId":
			pid, _ = set.Str()
		case "rateId":
			rid, _ = set.Str()
		case "version":
			version = set.Int()
		case "availabilities":
			if set.Peek() != '[' {
				return false
			}
			set.Skip()
		default:
			return false
		}
		return set.OK()
	})
	return sid, pid, rid, version, ok && set.End()
}

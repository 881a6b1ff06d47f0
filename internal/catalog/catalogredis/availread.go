package catalogredis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

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
//
// An availability record whose version the view already holds is not sent
// (heldVersions): the writer applied it before the processor read it back,
// which is the usual case, and sending a booking system's set again (tens
// of KB each, a thousand per full synchronization) only for the script to
// leave it is most of this path's Redis traffic.
func (s *Store) ApplyRecords(ctx context.Context, msgs []stream.Message) ([]bool, error) {
	recs := make([]availRecord, len(msgs))
	fast := make([]bool, len(msgs))
	for i, m := range msgs {
		recs[i], fast[i] = availRecordFast(m.Value)
	}
	held, err := s.heldVersions(ctx, recs, fast)
	if err != nil {
		return nil, fmt.Errorf("apply %d catalog records: %w", len(msgs), err)
	}
	calls := make([]scriptCall, 0, len(msgs))
	pos := make([]int, 0, len(msgs))
	for i, m := range msgs {
		if fast[i] {
			if held[i] {
				continue // applied false, as the script would answer
			}
			rec := recs[i]
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

// heldVersions reports, for each fast record, whether the view already
// holds its version or a newer one (one pipelined HGET per record). Such a
// record would change nothing: newerLua's rule, read ahead of the script.
// Versions only grow, so what is held now is still held when the batch's
// script would run; a view lost meanwhile is rebuilt from the topics by
// the views guard, as it would be had the script run.
func (s *Store) heldVersions(ctx context.Context, recs []availRecord, fast []bool) ([]bool, error) {
	held := make([]bool, len(recs))
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(recs))
	for i, rec := range recs {
		if fast[i] {
			cmds[i] = pipe.HGet(ctx, s.k.versions(rec.sid), verAvail(rec.pid, rec.rid))
		}
	}
	if pipe.Len() == 0 {
		return held, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, catalog.Unavailable("read versions", err)
	}
	for i, c := range cmds {
		if c == nil {
			continue
		}
		cur, err := c.Result()
		if err != nil {
			continue // none yet (redis.Nil): not held
		}
		held[i] = !newerThan(cur, recs[i].version, recs[i].at.UnixMicro())
	}
	return held, nil
}

// newerThan is newerLua's test in Go: whether version v at t (µs) is
// newer than the stored "version:micros" cur. A stored value it cannot
// read answers true (the script decides).
func newerThan(cur string, v, t int64) bool {
	cvs, cts, ok := strings.Cut(cur, ":")
	digits := func(x string) bool { return x != "" && strings.Trim(x, "0123456789") == "" }
	if !ok || !digits(cvs) || !digits(cts) {
		return true
	}
	cv, err1 := strconv.ParseInt(cvs, 10, 64)
	ct, err2 := strconv.ParseInt(cts, 10, 64)
	if err1 != nil || err2 != nil {
		return true
	}
	return v > cv || (v == cv && t > ct)
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

package availability

import (
	"bytes"
	"strconv"
	"strings"
	"time"

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
	r := jreader{b: value, ok: true}
	var env schemas.Envelope
	var data []byte
	ok := r.object(func(key []byte) bool {
		switch string(key) {
		case "id":
			env.ID, _ = r.str()
		case "type":
			env.Type, _ = r.str()
		case "key":
			env.Key, _ = r.str()
		case "source":
			env.Source, _ = r.str()
		case "version":
			env.Version = r.int()
		case "time":
			env.Time = r.time()
		case "deleted":
			env.Deleted = r.bool()
		case "data":
			start := r.i
			r.skip()
			data = value[start:r.i]
		default:
			return r.unknown(key, "id", "type", "key", "source", "version", "time", "deleted", "data")
		}
		return r.ok
	})
	if !ok || !r.end() || env.Type != SnapshotEventType || data == nil {
		return input{}, false
	}
	env.Data = data
	var s snapshotWire
	d := jreader{b: data, ok: true}
	seenSlots := false
	ok = d.object(func(key []byte) bool {
		switch string(key) {
		case "supplierId":
			s.sid, _ = d.str()
		case "productId":
			s.pid, _ = d.str()
		case "rateId":
			s.rid, _ = d.str()
		case "start":
			s.start = d.time()
		case "end":
			s.end = d.time()
		case "retrieved":
			s.retrieved = d.time()
		case "availabilities":
			if seenSlots {
				return false // encoding/json's reuse of the slice: leave it to it
			}
			seenSlots = true
			if d.null() {
				return true
			}
			s.slots = make([]Slot, 0, bytes.Count(data[d.i:], []byte(`"capacity"`)))
			return d.array(func() bool {
				var a Slot
				ok := d.object(func(key []byte) bool {
					switch string(key) {
					case "start":
						a.Start = d.time()
					case "end":
						a.End = d.time()
					case "capacity":
						a.Vacancies = int(d.int())
					default:
						return d.unknown(key, "start", "end", "capacity")
					}
					return d.ok
				})
				s.slots = append(s.slots, Slot{Start: a.Start.UTC(), End: a.End.UTC(), Vacancies: a.Vacancies})
				return ok
			})
		default:
			return d.unknown(key, "supplierId", "productId", "rateId", "start", "end", "retrieved", "availabilities")
		}
		return d.ok
	})
	if !ok || !d.end() {
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

// jreader reads the JSON subset of decodeSnapshotFast. The first
// surprise clears ok, and every later read returns zero.
type jreader struct {
	b  []byte
	i  int
	ok bool
}

func (r *jreader) fail() { r.ok = false }

func (r *jreader) ws() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

func (r *jreader) peek() byte {
	r.ws()
	if r.i >= len(r.b) {
		return 0
	}
	return r.b[r.i]
}

// end reports whether only whitespace is left.
func (r *jreader) end() bool { r.ws(); return r.ok && r.i == len(r.b) }

// object reads an object, calling field with each key, the reader on its
// value.
func (r *jreader) object(field func(key []byte) bool) bool {
	if !r.ok || r.peek() != '{' {
		r.fail()
		return false
	}
	r.i++
	if r.peek() == '}' {
		r.i++
		return true
	}
	for {
		key, ok := r.rawStr()
		if !ok || r.peek() != ':' {
			r.fail()
			return false
		}
		r.i++
		r.ws()
		if !field(key) || !r.ok {
			r.fail()
			return false
		}
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return true
		default:
			r.fail()
			return false
		}
	}
}

func (r *jreader) array(elem func() bool) bool {
	if !r.ok || r.peek() != '[' {
		r.fail()
		return false
	}
	r.i++
	if r.peek() == ']' {
		r.i++
		return true
	}
	for {
		if !elem() || !r.ok {
			r.fail()
			return false
		}
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return true
		default:
			r.fail()
			return false
		}
	}
}

// unknown skips the value of a key the fast path ignores; a key that
// encoding/json would match to a known one (it folds case) is a surprise.
func (r *jreader) unknown(key []byte, known ...string) bool {
	for _, k := range known {
		if strings.EqualFold(string(key), k) {
			return false
		}
	}
	r.skip()
	return r.ok
}

// rawStr reads a string of printable ASCII without escapes.
func (r *jreader) rawStr() ([]byte, bool) {
	if !r.ok || r.peek() != '"' {
		r.fail()
		return nil, false
	}
	r.i++
	start := r.i
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			r.i++
			return r.b[start : r.i-1], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			r.fail()
			return nil, false
		}
		r.i++
	}
	r.fail()
	return nil, false
}

func (r *jreader) str() (string, bool) {
	b, ok := r.rawStr()
	return string(b), ok
}

func (r *jreader) null() bool {
	r.ws()
	if r.ok && len(r.b)-r.i >= 4 && string(r.b[r.i:r.i+4]) == "null" {
		r.i += 4
		return true
	}
	return false
}

func (r *jreader) bool() bool {
	r.ws()
	switch {
	case !r.ok:
	case len(r.b)-r.i >= 4 && string(r.b[r.i:r.i+4]) == "true":
		r.i += 4
		return true
	case len(r.b)-r.i >= 5 && string(r.b[r.i:r.i+5]) == "false":
		r.i += 5
		return false
	}
	r.fail()
	return false
}

// int reads an integer literal as encoding/json does for an int64 field
// (no fraction or exponent, no overflow).
func (r *jreader) int() int64 {
	r.ws()
	if !r.ok || r.i >= len(r.b) {
		r.fail()
		return 0
	}
	start := r.i
	r.number()
	if !r.ok {
		return 0
	}
	v, err := strconv.ParseInt(string(r.b[start:r.i]), 10, 64)
	if err != nil {
		r.fail()
		return 0
	}
	return v
}

// time reads an RFC 3339 string as time.Time's UnmarshalJSON does.
func (r *jreader) time() time.Time {
	b, ok := r.rawStr()
	if !ok {
		return time.Time{}
	}
	var t time.Time
	if err := t.UnmarshalText(b); err != nil {
		r.fail()
		return time.Time{}
	}
	return t
}

// skip passes over one value, checking its grammar.
func (r *jreader) skip() {
	switch c := r.peek(); {
	case !r.ok:
	case c == '{':
		r.object(func([]byte) bool { r.skip(); return r.ok })
	case c == '[':
		r.array(func() bool { r.skip(); return r.ok })
	case c == '"':
		r.rawStr()
	case c == 't' || c == 'f':
		r.bool()
	case c == 'n':
		if !r.null() {
			r.fail()
		}
	case c == '-' || (c >= '0' && c <= '9'):
		r.number()
	default:
		r.fail()
	}
}

// number passes over a JSON number.
func (r *jreader) number() {
	digits := func() int {
		n := 0
		for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' {
			r.i++
			n++
		}
		return n
	}
	if r.b[r.i] == '-' {
		r.i++
	}
	start := r.i
	if n := digits(); n == 0 || (n > 1 && r.b[start] == '0') {
		r.fail()
		return
	}
	if r.i < len(r.b) && r.b[r.i] == '.' {
		r.i++
		if digits() == 0 {
			r.fail()
			return
		}
	}
	if r.i < len(r.b) && (r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		r.i++
		if r.i < len(r.b) && (r.b[r.i] == '+' || r.b[r.i] == '-') {
			r.i++
		}
		if digits() == 0 {
			r.fail()
		}
	}
}

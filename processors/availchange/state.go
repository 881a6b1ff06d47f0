package availchange

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// stored is the Redis form of a rate's state: the diff state and the last
// version applied per source (an older event is skipped).
type stored struct {
	State
	Versions map[string]int64 `json:"ver"`
}

// Redis value formats of a rate's state. The first byte tells them apart:
// the original JSON object always starts with '{'; the compact binary form
// starts with stateFormatV1. Both are read; the compact one is written.
const stateFormatV1 = 0x01

// encodeState returns the compact form of st, appended to buf:
//
//	0x01
//	uvarint n, n × (uvarint len, source bytes, varint version)   sorted by source
//	uvarint n, n × (start, end, varint vacancies)                 slots
//	uvarint n, n × (from, to)                                      coverage
//
// where every time is a varint of its Unix seconds minus the previous
// time's seconds (0 before the first) and a uvarint of its nanoseconds.
// Sorted slots with hour-aligned windows cost about 6 bytes each, against
// about 70 in JSON, and no time parsing to read back.
func encodeState(buf []byte, st stored) []byte {
	buf = append(buf, stateFormatV1)
	sources := make([]string, 0, len(st.Versions))
	for s := range st.Versions {
		sources = append(sources, s)
	}
	slices.Sort(sources)
	buf = binary.AppendUvarint(buf, uint64(len(sources)))
	for _, s := range sources {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
		buf = binary.AppendVarint(buf, st.Versions[s])
	}
	var prev int64
	putTime := func(t time.Time) {
		sec := t.Unix()
		buf = binary.AppendVarint(buf, sec-prev)
		buf = binary.AppendUvarint(buf, uint64(t.Nanosecond()))
		prev = sec
	}
	buf = binary.AppendUvarint(buf, uint64(len(st.Slots)))
	for _, s := range st.Slots {
		putTime(s.Start)
		putTime(s.End)
		buf = binary.AppendVarint(buf, int64(s.Vacancies))
	}
	buf = binary.AppendUvarint(buf, uint64(len(st.Coverage)))
	for _, c := range st.Coverage {
		putTime(c.From)
		putTime(c.To)
	}
	return buf
}

var errShortState = errors.New("truncated state")

// decodeState reads either format; an empty value is the empty state.
func decodeState(raw []byte) (stored, error) {
	var st stored
	switch {
	case len(raw) == 0:
	case raw[0] == '{':
		if err := json.Unmarshal(raw, &st); err != nil {
			return stored{}, err
		}
	case raw[0] == stateFormatV1:
		d := stateDecoder{b: raw[1:]}
		n := d.count()
		st.Versions = make(map[string]int64, n)
		for range n {
			l := d.count()
			if d.err != nil || l > len(d.b) {
				return stored{}, errShortState
			}
			s := string(d.b[:l])
			d.b = d.b[l:]
			st.Versions[s] = d.varint()
		}
		if n := d.count(); n > 0 {
			st.Slots = make([]Slot, n)
			for i := range st.Slots {
				st.Slots[i] = Slot{Start: d.time(), End: d.time(), Vacancies: int(d.varint())}
			}
		}
		if n := d.count(); n > 0 {
			st.Coverage = make([]Span, n)
			for i := range st.Coverage {
				st.Coverage[i] = Span{From: d.time(), To: d.time()}
			}
		}
		if d.err != nil {
			return stored{}, d.err
		}
		if len(d.b) != 0 {
			return stored{}, fmt.Errorf("%d bytes after the state", len(d.b))
		}
	default:
		return stored{}, fmt.Errorf("unknown state format 0x%02x", raw[0])
	}
	if st.Versions == nil {
		st.Versions = map[string]int64{}
	}
	return st, nil
}

// stateDecoder reads the compact form; the first error sticks and every
// later read returns zero.
type stateDecoder struct {
	b    []byte
	prev int64
	err  error
}

func (d *stateDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errShortState
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *stateDecoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errShortState
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a length and bounds it by what is left (each element takes
// at least one byte), so a corrupt value cannot make a huge allocation.
func (d *stateDecoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		if d.err == nil {
			d.err = errShortState
		}
		return 0
	}
	return int(n)
}

func (d *stateDecoder) time() time.Time {
	sec := d.prev + d.varint()
	nsec := d.uvarint()
	if d.err != nil {
		return time.Time{}
	}
	if nsec >= 1e9 {
		d.err = fmt.Errorf("nanoseconds %d out of range", nsec)
		return time.Time{}
	}
	d.prev = sec
	return time.Unix(sec, int64(nsec)).UTC()
}

package jsonwire

import (
	"strconv"
	"strings"
	"time"
)

// Reader reads a plain subset of JSON in one pass, for the hot decoders
// that fall back to encoding/json on anything unusual: strings of
// printable ASCII without escapes, integers, true/false/null, RFC 3339
// times, objects and arrays. The first surprise clears its ok, every
// later read returns zero, and the caller takes the encoding/json path,
// which then has the last word (each caller fuzzes the two against each
// other).
type Reader struct {
	b  []byte
	i  int
	ok bool
}

// NewReader reads b.
func NewReader(b []byte) *Reader { return &Reader{b: b, ok: true} }

// OK reports whether nothing surprised the reader so far.
func (r *Reader) OK() bool { return r.ok }

// Pos is the offset of the next byte to read.
func (r *Reader) Pos() int { return r.i }

// Bytes is what the reader reads.
func (r *Reader) Bytes() []byte { return r.b }

func (r *Reader) Fail() { r.ok = false }

func (r *Reader) ws() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

func (r *Reader) Peek() byte {
	r.ws()
	if r.i >= len(r.b) {
		return 0
	}
	return r.b[r.i]
}

// end reports whether only whitespace is left.
func (r *Reader) End() bool { r.ws(); return r.ok && r.i == len(r.b) }

// object reads an object, calling field with each key, the reader on its
// value.
func (r *Reader) Object(field func(key []byte) bool) bool {
	if !r.ok || r.Peek() != '{' {
		r.Fail()
		return false
	}
	r.i++
	if r.Peek() == '}' {
		r.i++
		return true
	}
	for {
		key, ok := r.RawStr()
		if !ok || r.Peek() != ':' {
			r.Fail()
			return false
		}
		r.i++
		r.ws()
		if !field(key) || !r.ok {
			r.Fail()
			return false
		}
		switch r.Peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return true
		default:
			r.Fail()
			return false
		}
	}
}

func (r *Reader) Array(elem func() bool) bool {
	if !r.ok || r.Peek() != '[' {
		r.Fail()
		return false
	}
	r.i++
	if r.Peek() == ']' {
		r.i++
		return true
	}
	for {
		if !elem() || !r.ok {
			r.Fail()
			return false
		}
		switch r.Peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return true
		default:
			r.Fail()
			return false
		}
	}
}

// unknown skips the value of a key the fast path ignores; a key that
// encoding/json would match to a known one (it folds case) is a surprise.
func (r *Reader) Unknown(key []byte, known ...string) bool {
	for _, k := range known {
		if strings.EqualFold(string(key), k) {
			return false
		}
	}
	r.Skip()
	return r.ok
}

// rawStr reads a string of printable ASCII without escapes.
func (r *Reader) RawStr() ([]byte, bool) {
	if !r.ok || r.Peek() != '"' {
		r.Fail()
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
			r.Fail()
			return nil, false
		}
		r.i++
	}
	r.Fail()
	return nil, false
}

func (r *Reader) Str() (string, bool) {
	b, ok := r.RawStr()
	return string(b), ok
}

func (r *Reader) Null() bool {
	r.ws()
	if r.ok && len(r.b)-r.i >= 4 && string(r.b[r.i:r.i+4]) == "null" {
		r.i += 4
		return true
	}
	return false
}

func (r *Reader) Bool() bool {
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
	r.Fail()
	return false
}

// int reads an integer literal as encoding/json does for an int64 field
// (no fraction or exponent, no overflow).
func (r *Reader) Int() int64 {
	r.ws()
	if !r.ok || r.i >= len(r.b) {
		r.Fail()
		return 0
	}
	start := r.i
	r.number()
	if !r.ok {
		return 0
	}
	v, err := strconv.ParseInt(string(r.b[start:r.i]), 10, 64)
	if err != nil {
		r.Fail()
		return 0
	}
	return v
}

// time reads an RFC 3339 string as time.Time's UnmarshalJSON does.
func (r *Reader) Time() time.Time {
	b, ok := r.RawStr()
	if !ok {
		return time.Time{}
	}
	var t time.Time
	if err := t.UnmarshalText(b); err != nil {
		r.Fail()
		return time.Time{}
	}
	return t
}

// skip passes over one value, checking its grammar.
func (r *Reader) Skip() {
	switch c := r.Peek(); {
	case !r.ok:
	case c == '{':
		r.Object(func([]byte) bool { r.Skip(); return r.ok })
	case c == '[':
		r.Array(func() bool { r.Skip(); return r.ok })
	case c == '"':
		r.RawStr()
	case c == 't' || c == 'f':
		r.Bool()
	case c == 'n':
		if !r.Null() {
			r.Fail()
		}
	case c == '-' || (c >= '0' && c <= '9'):
		r.number()
	default:
		r.Fail()
	}
}

// number passes over a JSON number.
func (r *Reader) number() {
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
		r.Fail()
		return
	}
	if r.i < len(r.b) && r.b[r.i] == '.' {
		r.i++
		if digits() == 0 {
			r.Fail()
			return
		}
	}
	if r.i < len(r.b) && (r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		r.i++
		if r.i < len(r.b) && (r.b[r.i] == '+' || r.b[r.i] == '-') {
			r.i++
		}
		if digits() == 0 {
			r.Fail()
		}
	}
}

// Raw passes over one value and returns its bytes as they are (what
// encoding/json keeps in a json.RawMessage); a null is a surprise, since
// encoding/json keeps it as the bytes "null" in some fields and nil in
// others.
func (r *Reader) Raw() []byte {
	if r.Peek() == 'n' {
		r.Fail()
		return nil
	}
	start := r.i
	r.Skip()
	if !r.ok {
		return nil
	}
	return r.b[start:r.i]
}

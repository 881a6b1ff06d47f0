// Package jsonwire writes JSON by hand, byte for byte what encoding/json
// writes, for the hot paths where reflection is most of the cost (the
// dispatcher's and processors' records, reseller answers). It owns the
// escaping rules only; each caller lays out its own objects and keeps a
// test that compares them with encoding/json. It must not grow into a
// general encoder: anything unusual goes through encoding/json.
package jsonwire

import (
	"time"
	"unicode/utf8"
)

const hex = "0123456789abcdef"

// safe[c] is whether encoding/json (with its default HTML escaping) writes
// the ASCII byte c as is inside a string.
var safe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// AppendString appends s as a JSON string, escaped as encoding/json.Marshal
// escapes it: quote and backslash, control characters (\b \f \n \r \t or
// \u00XX), <, > and & as \u003c \u003e \u0026, U+2028 and U+2029 as
// \u2028 \u2029, and each byte of invalid UTF-8 as \ufffd.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendASCII appends s as a JSON string for a value already checked to
// be printable ASCII (a request id): quote and backslash escaped, every
// other byte outside 0x20-0x7e as \u00XX so the JSON stays valid
// whatever s holds. Not encoding/json's bytes (it escapes <, > and & too;
// the decoded string is the same), which is why it is a function of its
// own: the request id's writers (query/httpapi's error and JSON answers,
// query/reseller's stored bytes) write the same bytes.
func AppendASCII(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20 || c > 0x7e:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// AppendTime appends t as encoding/json writes a time.Time (RFC 3339 with
// nanoseconds, quoted); ok is false, and nothing is appended, when
// encoding/json refuses it: a year that is not four digits, or an offset
// of 24 hours or more (the checks of time.Time.MarshalJSON, on the same
// formatted bytes).
func AppendTime(dst []byte, t time.Time) (out []byte, ok bool) {
	n0 := len(dst)
	b := append(dst, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	f := b[n0+1:]
	switch {
	case len(f) < len("2006-01-02T15:04:05Z") || f[4] != '-':
		return dst[:n0], false
	case f[len(f)-1] != 'Z':
		c := f[len(f)-len("Z07:00")]
		h := 10*int(f[len(f)-5]-'0') + int(f[len(f)-4]-'0')
		if ('0' <= c && c <= '9') || h >= 24 {
			return dst[:n0], false
		}
	}
	return append(b, '"'), true
}

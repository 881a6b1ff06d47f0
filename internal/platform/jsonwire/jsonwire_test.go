package jsonwire

import (
	"encoding/json"
	"testing"
	"time"
)

func TestAppendString_MatchesEncodingJSON(t *testing.T) {
	tests := []struct{ name, s string }{
		{"empty", ""},
		{"plain", "lat-sup001/p/r0001"},
		{"quote and backslash", `a"b\c`},
		{"html", "<a href='x'>&</a>"},
		{"controls", "\x00\x01\b\f\n\r\t\x1f\x7f"},
		{"multibyte", "Zürich – 東京 😀"},
		{"line separators", "a\u2028b\u2029c"},
		{"invalid utf-8", "a\xffb\xc3(c\xed\xa0\x80"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, _ := json.Marshal(tt.s)
			if got := AppendString(nil, tt.s); string(got) != string(want) {
				t.Fatalf("AppendString(%q) = %s, want %s", tt.s, got, want)
			}
		})
	}
}

func FuzzAppendTime(f *testing.F) {
	f.Add(int64(0), int64(0), 0)
	f.Add(int64(1764000000), int64(123456789), 3600)
	f.Add(int64(-62135596800), int64(0), -30)
	f.Add(int64(253402300800), int64(1), 86400)
	f.Fuzz(func(t *testing.T, sec, nsec int64, off int) {
		tm := time.Unix(sec, nsec).In(time.FixedZone("z", off%(48*3600)))
		want, err := json.Marshal(tm)
		got, ok := AppendTime([]byte("x"), tm)
		if ok != (err == nil) {
			t.Fatalf("%v: ok = %v, encoding/json error %v", tm, ok, err)
		}
		if ok && string(got) != "x"+string(want) {
			t.Fatalf("%v: AppendTime = %s, want x%s", tm, got, want)
		}
		if !ok && string(got) != "x" {
			t.Fatalf("%v: refused but appended %q", tm, got)
		}
	})
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", `"\`, "<>&", "\x00\b\f\n\r\t", "a\u2028", "\xff\xfe", "é😀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	})
}

func TestAppendTime_MatchesEncodingJSON(t *testing.T) {
	paris, _ := time.LoadLocation("Europe/Paris")
	tests := []struct {
		name string
		t    time.Time
		ok   bool
	}{
		{"utc with nanoseconds", time.Date(2026, 11, 25, 9, 0, 0, 123456789, time.UTC), true},
		{"whole second", time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC), true},
		{"zone", time.Date(2026, 7, 1, 9, 30, 0, 0, paris), true},
		{"zero", time.Time{}, true},
		{"year 10000", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{"offset with seconds (truncated, as encoding/json does)", time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 30)), true},
		{"offset of a day", time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 24*3600)), false},
		{"negative year", time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.Marshal(tt.t)
			got, ok := AppendTime(nil, tt.t)
			if ok != tt.ok || ok != (err == nil) {
				t.Fatalf("ok = %v (encoding/json error %v), want %v", ok, err, tt.ok)
			}
			if ok && string(got) != string(want) {
				t.Fatalf("AppendTime = %s, want %s", got, want)
			}
		})
	}
}

func TestAppendASCII_EscapesOnlyWhatJSONNeedsAndDecodesBack(t *testing.T) {
	tests := []struct{ name, s, want string }{
		{"empty", "", `""`},
		{"printable", "req-1 <&>", `"req-1 <&>"`},
		{"quote and backslash", `a"b\c`, `"a\"b\\c"`},
		{"controls and high bytes", "a\x00\x1f\x7f\xff", `"a\u0000\u001f\u007f\u00ff"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AppendASCII([]byte("x"), tt.s)
			if string(got) != "x"+tt.want {
				t.Fatalf("AppendASCII(%q) = %s, want x%s", tt.s, got, tt.want)
			}
			var back string
			if err := json.Unmarshal(got[1:], &back); err != nil {
				t.Fatalf("%s is not a JSON string: %v", got[1:], err)
			}
			if tt.name != "controls and high bytes" && back != tt.s {
				t.Fatalf("decoded %q, want %q", back, tt.s)
			}
		})
	}
}

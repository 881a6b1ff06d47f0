package registry

import (
	"strings"
	"testing"
	"time"
)

func TestParseThrottleDelay(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"0s", 0, false},
		{"-0s", 0, false},
		{"+5s", 5 * time.Second, false},
		{"300ms", 300 * time.Millisecond, false},
		{"1.5s", 1500 * time.Millisecond, false},
		{".5s", 500 * time.Millisecond, false},
		{"1.s", time.Second, false},
		{"2h45m", 2*time.Hour + 45*time.Minute, false},
		{"1h2m3s4ms5us6ns", time.Hour + 2*time.Minute + 3*time.Second + 4*time.Millisecond + 5*time.Microsecond + 6, false},
		{"10us", 10 * time.Microsecond, false},
		{"10µs", 10 * time.Microsecond, false}, // U+00B5 micro sign

		{"100ns", 100, false},
		{"24h", 24 * time.Hour, false},
		{"1m30s", 90 * time.Second, false},

		{"", 0, true},
		{"0", 0, true},    // every number has a unit (ParseDuration admits a bare 0)
		{"10μs", 0, true}, // U+03BC Greek mu is not the spec's µ (ParseDuration reads it)
		{"+", 0, true},
		{"-1s", 0, true},
		{"-1ns", 0, true},
		{"-1.5h", 0, true},
		{"5", 0, true},   // a number needs a unit
		{"1d", 0, true},  // days are not a unit
		{"1 s", 0, true}, // no spaces
		{" 1s", 0, true},
		{"1S", 0, true}, // units are lower case
		{"s", 0, true},
		{".s", 0, true},
		{"1e3s", 0, true},
		{"1,5s", 0, true},
		{"24h0m1s", 0, true},     // over MaxThrottleDelay
		{"9999999999h", 0, true}, // overflow
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseThrottleDelay(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseThrottleDelay(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("ParseThrottleDelay(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// specDuration is the spec's sentence turned into a matcher by hand,
// independently of the implementation: a possibly signed sequence of
// decimal numbers, each with optional fraction and a unit suffix.
func specDuration(s string) bool {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	if s == "" {
		return false
	}
	for s != "" {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		digits := i
		if i < len(s) && s[i] == '.' {
			i++
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			digits += i - digits - 1
		}
		if digits == 0 {
			return false
		}
		s = s[i:]
		unit := ""
		for _, u := range []string{"ns", "us", "\u00b5s", "ms", "s", "m", "h"} {
			if strings.HasPrefix(s, u) && len(u) > len(unit) {
				unit = u
			}
		}
		if unit == "" {
			return false
		}
		s = s[len(unit):]
	}
	return true
}

// FuzzParseThrottleDelay checks that the parser never panics, never
// accepts a negative or over-limit delay, accepts exactly what the spec's
// grammar describes (specDuration) and computes what ParseDuration does.
func FuzzParseThrottleDelay(f *testing.F) {
	for _, s := range []string{"0", "1s", "-1s", "1.5h", "2h45m", "10\u00b5s", "10\u03bcs", "", "1d", "+.5ms", "9223372036854775807ns", "1e3s", "1.s", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseThrottleDelay(s)
		want, werr := time.ParseDuration(s)
		switch {
		case !specDuration(s) || werr != nil || want < 0 || want > MaxThrottleDelay:
			if err == nil {
				t.Fatalf("ParseThrottleDelay(%q) = %v, want an error", s, got)
			}
		case err != nil:
			t.Fatalf("ParseThrottleDelay(%q) = %v, want %v", s, err, want)
		case got != want:
			t.Fatalf("ParseThrottleDelay(%q) = %v, want %v", s, got, want)
		}
	})
}

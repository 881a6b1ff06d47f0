package registry

import (
	"testing"
	"time"
)

func TestParseThrottleDelay(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"0", 0, false},
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
		{"10μs", 10 * time.Microsecond, false}, // U+03BC Greek mu, which ParseDuration also reads
		{"100ns", 100, false},
		{"24h", 24 * time.Hour, false},
		{"1m30s", 90 * time.Second, false},

		{"", 0, true},
		{"-1s", 0, true},
		{"-1ns", 0, true},
		{"-1.5h", 0, true},
		{"5", 0, true},   // a number needs a unit, but for 0
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

// FuzzParseThrottleDelay checks that the parser never panics, never
// accepts a negative or over-limit delay, and agrees with the spec's
// grammar as time.ParseDuration implements it.
func FuzzParseThrottleDelay(f *testing.F) {
	for _, s := range []string{"0", "1s", "-1s", "1.5h", "2h45m", "10µs", "", "1d", "+.5ms", "9223372036854775807ns", "1e3s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseThrottleDelay(s)
		want, werr := time.ParseDuration(s)
		switch {
		case werr != nil || want < 0 || want > MaxThrottleDelay:
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

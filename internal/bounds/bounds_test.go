package bounds_test

import (
	"errors"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/bounds"
	"github.com/switchbackhq/switchback/internal/platform/domainerr"
)

func TestTime_OneYearBackToTwoYearsAhead(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	from, until := bounds.Window(now)
	tests := []struct {
		name string
		t    time.Time
		ok   bool
	}{
		{"now", now, true},
		{"the first instant", from, true},
		{"the last instant", until, true},
		{"just before", from.Add(-time.Second), false},
		{"just after", until.Add(time.Second), false},
		{"year 0001", time.Time{}.Add(time.Hour), false},
		{"year 9999", time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{"another zone, same instant", now.In(time.FixedZone("x", 5*3600)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := bounds.Time("items[0].at", tt.t, now)
			if (err == nil) != tt.ok {
				t.Fatalf("Time = %v, want ok=%v", err, tt.ok)
			}
			var fe *domainerr.FieldError
			if err != nil && (!errors.As(err, &fe) || fe.Field != "items[0].at") {
				t.Fatalf("err %v is not INVALID_FIELD on the field", err)
			}
		})
	}
	// Every accepted time fits ClickHouse's DateTime (1970 to 2106).
	if from.Before(time.Unix(0, 0)) || until.After(time.Unix(1<<32-1, 0)) {
		t.Fatalf("the window %s..%s leaves DateTime", from, until)
	}
}

func TestValidityAndInt(t *testing.T) {
	for _, tt := range []struct {
		t  time.Time
		ok bool
	}{
		{bounds.ValidityFrom, true}, {bounds.ValidityUntil.Add(-time.Nanosecond), true},
		{bounds.ValidityFrom.Add(-time.Second), false}, {bounds.ValidityUntil, false},
	} {
		if err := bounds.Validity("valid.from", tt.t); (err == nil) != tt.ok {
			t.Errorf("Validity(%s) = %v, want ok=%v", tt.t, err, tt.ok)
		}
	}
	for _, tt := range []struct {
		v  int64
		ok bool
	}{{0, true}, {bounds.MaxCapacity, true}, {-1, false}, {bounds.MaxCapacity + 1, false}, {1<<63 - 1, false}} {
		if err := bounds.Int("capacity", tt.v, 0, bounds.MaxCapacity); (err == nil) != tt.ok {
			t.Errorf("Int(%d) = %v, want ok=%v", tt.v, err, tt.ok)
		}
	}
}

package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/domainerr"
)

func price(id, retail string, labels ...string) Price {
	return Price{ID: id, Labels: labels, Retail: &Money{Amount: json.Number(retail), Currency: "EUR"}}
}

func entry(from, until string, ps ...Price) PriceScheduleEntry {
	if ps == nil {
		ps = []Price{}
	}
	return PriceScheduleEntry{From: from, Until: until, Prices: ps}
}

func TestValidatePriceSchedule(t *testing.T) {
	tests := []struct {
		name    string
		in      []PriceScheduleEntry
		field   string // "" = valid
		wantErr bool
	}{
		{"empty schedule is valid", []PriceScheduleEntry{}, "", false},
		{"missing entries", nil, "entries", true},
		{"one day", []PriceScheduleEntry{entry("2026-12-01", "2026-12-01", price("a", "10"))}, "", false},
		{"bad from", []PriceScheduleEntry{entry("2026-13-01", "2026-12-01")}, "entries[0].from", true},
		{"bad until", []PriceScheduleEntry{entry("2026-12-01", "tomorrow")}, "entries[0].until", true},
		{"until before from", []PriceScheduleEntry{entry("2026-12-02", "2026-12-01")}, "entries[0].until", true},
		{"too long (past the window)", []PriceScheduleEntry{entry("2026-01-01", "2030-01-01")}, "entries[0].until", true},
		{"more than a year back", []PriceScheduleEntry{entry("2025-11-01", "2025-12-01")}, "entries[0].from", true},
		{"more than two years ahead", []PriceScheduleEntry{entry("2028-12-01", "2028-12-02")}, "entries[0].from", true},
		{"year 9999", []PriceScheduleEntry{entry("9999-12-01", "9999-12-02")}, "entries[0].from", true},
		{"missing prices", []PriceScheduleEntry{{From: "2026-12-01", Until: "2026-12-02"}}, "entries[0].prices", true},
		{"duplicate price id", []PriceScheduleEntry{entry("2026-12-01", "2026-12-02", price("a", "1"), price("a", "2"))}, "entries[0].prices[1].id", true},
		{"bad amount", []PriceScheduleEntry{entry("2026-12-01", "2026-12-02", price("a", "ten"))}, "entries[0].prices[0].retail.amount", true},
		{"overlap, given out of order", []PriceScheduleEntry{entry("2026-12-05", "2026-12-09"), entry("2026-12-01", "2026-12-05")}, "entries", true},
		{"adjacent, out of order", []PriceScheduleEntry{entry("2026-12-05", "2026-12-09"), entry("2026-12-01", "2026-12-04")}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidatePriceSchedule(tt.in, fuzzNow)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err == nil {
				for i := 1; i < len(tt.in); i++ {
					if tt.in[i].From < tt.in[i-1].From {
						t.Errorf("entries not sorted: %v", tt.in)
					}
				}
				return
			}
			var fe *domainerr.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Errorf("err %v, want a field error on %q", err, tt.field)
			}
		})
	}
}

func TestChangedPriceDays(t *testing.T) {
	d := func(s string) time.Time { v, _ := time.Parse(time.DateOnly, s); return v }
	rng := func(from, end string) DateRange { return DateRange{Start: d(from), End: d(end)} }
	base := []PriceScheduleEntry{entry("2026-12-01", "2026-12-10", price("a", "10", "public"))}
	tests := []struct {
		name        string
		prior, next []PriceScheduleEntry
		tags        []string
		want        []DateRange
	}{
		{"same schedule: nothing", base, base, nil, nil},
		{"first schedule: every covered day", nil, base, nil, []DateRange{rng("2026-12-01", "2026-12-11")}},
		{"schedule removed: every day it covered", base, []PriceScheduleEntry{}, nil, []DateRange{rng("2026-12-01", "2026-12-11")}},
		{"price changed on part of a range",
			base,
			[]PriceScheduleEntry{entry("2026-12-01", "2026-12-04", price("a", "10", "public")), entry("2026-12-05", "2026-12-10", price("a", "12", "public"))},
			nil, []DateRange{rng("2026-12-05", "2026-12-11")}},
		{"range extended by two days",
			base,
			[]PriceScheduleEntry{entry("2026-12-01", "2026-12-12", price("a", "10", "public"))},
			nil, []DateRange{rng("2026-12-11", "2026-12-13")}},
		{"two separate changes stay separate",
			[]PriceScheduleEntry{entry("2026-12-01", "2026-12-01", price("a", "1")), entry("2026-12-05", "2026-12-05", price("a", "1"))},
			[]PriceScheduleEntry{entry("2026-12-01", "2026-12-01", price("a", "2")), entry("2026-12-05", "2026-12-05", price("a", "2"))},
			nil, []DateRange{rng("2026-12-01", "2026-12-02"), rng("2026-12-05", "2026-12-06")}},
		{"adjacent changes merge",
			[]PriceScheduleEntry{entry("2026-12-01", "2026-12-02", price("a", "1")), entry("2026-12-03", "2026-12-04", price("a", "1"))},
			[]PriceScheduleEntry{entry("2026-12-01", "2026-12-02", price("a", "2")), entry("2026-12-03", "2026-12-04", price("a", "3"))},
			nil, []DateRange{rng("2026-12-01", "2026-12-05")}},
		{"change of a price the channel's tags hide: nothing",
			[]PriceScheduleEntry{entry("2026-12-01", "2026-12-02", price("a", "1", "public"), price("b", "5", "b2b"))},
			[]PriceScheduleEntry{entry("2026-12-01", "2026-12-02", price("a", "1", "public"), price("b", "6", "b2b"))},
			[]string{"public"}, nil},
		{"change of a price the channel's tags show",
			[]PriceScheduleEntry{entry("2026-12-01", "2026-12-02", price("a", "1", "public"), price("b", "5", "b2b"))},
			[]PriceScheduleEntry{entry("2026-12-01", "2026-12-02", price("a", "2", "public"), price("b", "5", "b2b"))},
			[]string{"public"}, []DateRange{rng("2026-12-01", "2026-12-03")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ChangedPriceDays(tt.prior, tt.next, tt.tags)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPriceChanges_CarryBothSides(t *testing.T) {
	prior := []PriceScheduleEntry{entry("2026-12-01", "2026-12-03", price("a", "10"))}
	next := []PriceScheduleEntry{entry("2026-12-02", "2026-12-03", price("a", "11"))}
	got := PriceChanges(prior, next, nil)
	if len(got) != 2 {
		t.Fatalf("got %d changes, want 2 (12-01 removed, 12-02..03 changed): %v", len(got), got)
	}
	if got[0].Next != nil || got[0].Prior[0].Retail.Amount != "10" {
		t.Errorf("first change %+v, want prior 10 and no next entry", got[0])
	}
	if got[1].Prior[0].Retail.Amount != "10" || got[1].Next[0].Retail.Amount != "11" {
		t.Errorf("second change %+v, want 10 -> 11", got[1])
	}
}

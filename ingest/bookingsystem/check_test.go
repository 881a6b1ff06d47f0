package bookingsystem_test

import (
	"context"
	"errors"
	"testing"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/platform/domainerr"
	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
)

// Both dialects refuse an incomplete availability check with the field
// named, before anything is sent.
func TestCheckAvailability_RefusesAnIncompleteCheckInBothDialects(t *testing.T) {
	v2 := newEnv(t, bookingsim.Config{}, bookingsystem.Options{})
	octo := newOCTOEnv(t, bookingsim.Config{}, bookingsystem.Options{})
	complete := bookingsystem.AvailabilityCheck{SupplierID: "S1", ProductID: "S1-P1", OptionID: "S1-P1-O1",
		AvailabilityType: bookingsystem.StartTime, AvailabilityIDs: []string{"a1"},
		Units: []bookingsystem.UnitQuantity{{UnitID: "adult", Quantity: 1}}}
	tests := []struct {
		name     string
		change   func(*bookingsystem.AvailabilityCheck)
		v2, octo string // the field each dialect names
	}{
		{"no availability type", func(c *bookingsystem.AvailabilityCheck) { c.AvailabilityType = "" }, "availabilityType", "availabilityType"},
		{"no availabilities", func(c *bookingsystem.AvailabilityCheck) { c.AvailabilityIDs = nil }, "availabilityIds", "availabilityIds"},
		{"no units", func(c *bookingsystem.AvailabilityCheck) { c.Units = nil }, "units", "units"},
		// Only the v2 dialect checks each unit.
		{"a unit without a quantity", func(c *bookingsystem.AvailabilityCheck) {
			c.Units = []bookingsystem.UnitQuantity{{UnitID: "adult"}}
			c.TimeZone = "Nowhere/Else"
		}, "units", "timeZone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := complete
			tt.change(&in)
			sentV2, sentOCTO := len(v2.seen.headers), len(octo.rec.all())
			for _, d := range []struct {
				name string
				c    *bookingsystem.Client
				conn bookingsystem.Connection
				want string
			}{{"v2", v2.c, v2.conn, tt.v2}, {"octo", octo.c, octo.conn, tt.octo}} {
				_, _, err := d.c.CheckAvailability(context.Background(), d.conn, in)
				var fe *domainerr.FieldError
				if !errors.As(err, &fe) || fe.Field != d.want {
					t.Errorf("%s: err = %v, want a field error on %s", d.name, err, d.want)
				}
			}
			if len(v2.seen.headers) != sentV2 || len(octo.rec.all()) != sentOCTO {
				t.Error("a refused check was sent")
			}
		})
	}
}

package changeworker

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/ingest/bookingsync"
	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/changerequest"
	"github.com/switchbackhq/switchback/internal/platform/outbound"
	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
)

// allowLoopback is the outbound policy of these tests: their simulators
// listen on loopback over http, which the default policy refuses.
var allowLoopback = outbound.Policy{AllowHTTP: true, AllowPrivate: true}

// TestRefresher_BookingSystemSuppliersAreRefreshedByBookingSync: a
// booking-system supplier's change notification is ingest/bookingsync's:
// standard mode writes the options' availabilities, price-schedule mode (spec doc 3,
// rule 4) the options' schedules; a partner supplier's price-schedule
// request still fails with its reason.
func TestRefresher_BookingSystemSuppliersAreRefreshedByBookingSync(t *testing.T) {
	now := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	sim := httptest.NewServer(bookingsim.New(bookingsim.Config{Suppliers: 1, APIKey: "bs-key", Clock: func() time.Time { return now }}))
	t.Cleanup(sim.Close)
	e := catalogtest.Start(t, catalogtest.Options{})
	ctx := context.Background()
	if _, err := e.Store.CreateSupplier(ctx, catalog.SystemScope(), catalog.SupplierInput{
		SupplierData: catalog.SupplierData{ID: "S1", Name: "Sim", Code: "SIM"},
		Connection: &catalog.ConnectionInput{Kind: catalog.ConnectionBookingSystem, BaseURL: sim.URL,
			Credentials: &catalog.CredentialsInput{BearerToken: "bs-key"}},
	}); err != nil {
		t.Fatal(err)
	}
	e.As(t, e.Admin).CreateSupplier(catalogtest.SupplierBody("PARTNER", "P", "P", "k", "s"))
	client := bookingsystem.NewClient(bookingsystem.Options{Outbound: allowLoopback})
	r := Refresher{Catalog: e.Store, BookingSync: bookingsync.New(bookingsync.Options{Catalog: e.Store, Client: client,
		Clock: func() time.Time { return now }})}
	req := changerequest.Request{ID: "r1", CreateRequest: changerequest.CreateRequest{SupplierID: "S1", ProductID: "S1-P1"},
		Mode: changerequest.ModeStandard, StartDate: "2026-11-22", EndDate: "2026-11-24"}
	res, err := r.Sync(ctx, req)
	if err != nil || res.Status(err) != changerequest.StatusSucceeded || res.Items != 2*2*3 {
		t.Fatalf("standard: %+v %v", res, err)
	}
	set, err := e.Store.Availabilities(ctx, catalog.SystemScope(), "S1", "S1-P1", "S1-P1-O2")
	if err != nil || len(set.Availabilities) != 6 {
		t.Fatalf("availabilities %+v %v", set, err)
	}
	req.Mode, req.EndDate = changerequest.ModePriceSchedule, "2027-01-10"
	res, err = r.Sync(ctx, req)
	if err != nil || res.Status(err) != changerequest.StatusSucceeded || res.Items != 2 {
		t.Fatalf("price-schedule: %+v %v", res, err)
	}
	ps, err := e.Store.PriceSchedule(ctx, catalog.SystemScope(), "S1", "S1-P1", "S1-P1-O1")
	if err != nil || len(ps.Entries) != 3 {
		t.Fatalf("price schedule %+v %v", ps, err)
	}
	_, err = r.Sync(ctx, changerequest.Request{ID: "r2",
		CreateRequest: changerequest.CreateRequest{SupplierID: "PARTNER", ProductID: "x"}, Mode: changerequest.ModePriceSchedule,
		StartDate: "2026-11-22", EndDate: "2026-11-24"})
	if err == nil || !strings.Contains(err.Error(), "partner interface has no price schedule read") {
		t.Fatalf("partner price-schedule: %v", err)
	}
}

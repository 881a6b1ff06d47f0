package bookingsync

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/cronreport"
	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
)

func (e *env) sync(t *testing.T, sy *Syncer, days int) (res resultT, err error) {
	t.Helper()
	r, err := sy.SyncSupplier(ctx, sid, e.clock.date(0), e.clock.date(days))
	return resultT{r.Products, r.Options, r.Availabilities, r.Errors}, err
}

type resultT struct {
	Products, Options, Availabilities int
	Errors                            []string
}

// TestSyncSupplier_NewProductsAndOptionsLandWithPlaceholderNames: a first
// synchronization creates every product and option of the booking system
// (doc 3 fields from it; the name is the id, never internalName, which
// doc 3 says MUST NOT be shown), and every option's availability over the
// window with the status mapping (FREESALE unlimited, AVAILABLE/LIMITED
// their vacancies, SOLD_OUT/CLOSED 0); the Result counts what was read.
func TestSyncSupplier_NewProductsAndOptionsLandWithPlaceholderNames(t *testing.T) {
	e := start(t, envOptions{sim: bookingsim.Config{TimeZone: "Europe/Paris"}})
	res, err := e.sync(t, e.syncer(nil), 7)
	if err != nil || len(res.Errors) != 0 {
		t.Fatalf("sync: %v %v", err, res.Errors)
	}
	// 4 products × 2 options; START_TIME (P1, P3) 3 slots a day, OPENING_HOURS (P2, P4) 2 ranges a day.
	if want := (resultT{4, 8, 2*2*7*3 + 2*2*7*2, nil}); res.Products != want.Products || res.Options != want.Options || res.Availabilities != want.Availabilities {
		t.Fatalf("result %+v, want %+v", res, want)
	}
	p := e.product(t, "S1-P2")
	if p.Name != "S1-P2" || p.Name == p.InternalName || p.InternalName != "Product S1-P2" || p.TimeZone != "Europe/Paris" ||
		p.AvailabilityType != "OPENING_HOURS" || p.Reference != "S1-P2" || p.Locale != "en" || !p.InstantDelivery ||
		!slices.Equal(p.DeliveryMethods, []string{"TICKET", "VOUCHER"}) || p.RedemptionMethod != "DIGITAL" {
		t.Fatalf("product %+v", p)
	}
	// The option's terms of sale from the booking system (MergeRate): a
	// cutoff of 1 hour, holds of DefaultHoldablePeriod, no unit bound, a
	// price per unit with its traveler type.
	rates, err := e.Store.Rates(ctx, catalog.SystemScope(), sid, "S1-P2")
	if err != nil || len(rates) != 2 || rates[0].ID != "S1-P2-O1" || rates[0].Name != "S1-P2-O1" || rates[0].OptionID != "S1-P2-O1" ||
		!rates[0].Cancelable || rates[0].Cutoff != 60 || !rates[0].Holdable || rates[0].HoldablePeriod != DefaultHoldablePeriod ||
		rates[0].MinTravelers != 1 || rates[0].MaxTravelers != 0 || len(rates[0].Prices) != 2 || rates[0].Prices[0].ID != "adult" ||
		rates[0].Prices[0].TravelerType.AgeBand != "ADULT" || *rates[0].Prices[0].TravelerType.MinAge != 18 || rates[0].Prices[0].Retail.Currency != "EUR" {
		t.Fatalf("rates %+v %v", rates, err)
	}
	free := e.availabilities(t, "S1-P2", "S1-P2-O1")
	if len(free) != 14 || free[0].Capacity != FreesaleCapacity {
		t.Fatalf("OPENING_HOURS availabilities %d, first %+v", len(free), free[0])
	}
	// The first range opens at 09:00 in Paris (08:00Z in November), on the first day.
	if want := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC); !free[0].Start.Equal(want) {
		t.Fatalf("first start %v, want %v", free[0].Start, want)
	}
	// START_TIME: each stored capacity is what the booking system reports.
	read, _, err := e.bsc.Availability(ctx, bookingsystem.Connection{Endpoint: e.url, APIKey: simKey}, bookingsystem.AvailabilityRequest{
		SupplierID: sid, ProductID: "S1-P1", OptionID: "S1-P1-O2", LocalDateStart: e.clock.today(0), LocalDateEnd: e.clock.today(7), AvailabilityType: "START_TIME"})
	if err != nil {
		t.Fatal(err)
	}
	stored := e.availabilities(t, "S1-P1", "S1-P1-O2")
	if len(stored) != len(read) {
		t.Fatalf("stored %d, read %d", len(stored), len(read))
	}
	statuses := map[string]bool{}
	for i, a := range read {
		statuses[a.Status] = true
		if stored[i].ID != bookingsystem.CatalogAvailabilityID(sid, "S1-P1", "S1-P1-O2", a.ID) || stored[i].SystemID != a.ID || stored[i].Capacity != Capacity(a) || !stored[i].Start.Equal(a.LocalDateTimeStart) {
			t.Fatalf("availability %d: stored %+v, read %+v", i, stored[i], a)
		}
	}
	if len(statuses) < 3 {
		t.Fatalf("the window shows statuses %v only; pick a longer one", statuses)
	}
	if got := counter(t, e.syncer(nil).metrics.products.WithLabelValues("created")); got != 4 {
		t.Errorf("products created = %v", got)
	}
}

// TestSyncSupplier_MergeKeepsOperatorFieldsAndTakesBookingSystemFields:
// for a product the operator set up, the fields doc 3 gives the booking
// system come from it and every other field stays; a stored rate is never
// rewritten (an option brings nothing but its id).
func TestSyncSupplier_MergeKeepsOperatorFieldsAndTakesBookingSystemFields(t *testing.T) {
	e := start(t, envOptions{})
	w := e.As(t, e.Admin)
	w.CreateProduct(sid, `{"id":"S1-P1","name":"Glacier walk","title":"Walk on ice",
"description":"Four hours on the glacier","code":"GW","partnerId":"gw-1","internalName":"old internal","reference":"old-ref","locale":"fr",
"timeZone":"Europe/Paris","instantConfirmation":false,"instantDelivery":false,"availabilityType":"OPENING_HOURS","deliveryFormats":["EAN13"],
"deliveryMethods":["VOUCHER"],"redemptionMethod":"PRINT","locations":[{"name":"Start","type":"START","order":1}],"ext":{"k":"v"}}`)
	w.CreateRate(sid, "S1-P1", catalogtest.RateBody("S1-P1-O1", "Morning walk"))
	rateBefore, _ := e.Store.Rate(ctx, catalog.SystemScope(), sid, "S1-P1", "S1-P1-O1")
	if _, err := e.sync(t, e.syncer(nil), 2); err != nil {
		t.Fatal(err)
	}
	p := e.product(t, "S1-P1")
	tests := []struct {
		field     string
		got, want any
	}{
		// The operator's.
		{"name", p.Name, "Glacier walk"},
		{"title", p.Title, "Walk on ice"},
		{"description", p.Description, "Four hours on the glacier"},
		{"code", p.Code, "GW"},
		{"partnerId", p.PartnerID, "gw-1"},
		{"locations", len(p.Locations), 1},
		{"ext", p.Ext["k"], "v"},
		// The booking system's (doc 3, Product).
		{"internalName", p.InternalName, "Product S1-P1"},
		{"reference", p.Reference, "S1-P1"},
		{"locale", p.Locale, "en"},
		{"timeZone", p.TimeZone, "UTC"},
		{"instantConfirmation", p.InstantConfirmation, true},
		{"instantDelivery", p.InstantDelivery, true},
		{"availabilityType", p.AvailabilityType, "START_TIME"},
		{"deliveryFormats", strings.Join(p.DeliveryFormats, ","), "QR_CODE"},
		{"deliveryMethods", strings.Join(p.DeliveryMethods, ","), "TICKET,VOUCHER"},
		{"redemptionMethod", p.RedemptionMethod, "DIGITAL"},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			if fmt.Sprint(tt.got) != fmt.Sprint(tt.want) {
				t.Errorf("%s = %v, want %v", tt.field, tt.got, tt.want)
			}
		})
	}
	// A stored rate keeps the operator's fields; its terms of sale are
	// the booking system's (MergeRate).
	rateAfter, _ := e.Store.Rate(ctx, catalog.SystemScope(), sid, "S1-P1", "S1-P1-O1")
	if rateAfter.Name != "Morning walk" || rateAfter.HoldablePeriod != rateBefore.HoldablePeriod || rateAfter.Cutoff != 60 ||
		rateAfter.MaxTravelers != 0 || rateAfter.Version != rateBefore.Version+1 || len(rateAfter.Prices) != 2 || rateAfter.Prices[0].ID != "adult" {
		t.Errorf("stored rate after the sync:\n%s\nbefore:\n%s", jsonString(rateAfter), jsonString(rateBefore))
	}
	if again, _ := e.sync(t, e.syncer(nil), 2); len(again.Errors) != 0 {
		t.Fatal(again.Errors)
	}
	if r, _ := e.Store.Rate(ctx, catalog.SystemScope(), sid, "S1-P1", "S1-P1-O1"); r.Version != rateAfter.Version {
		t.Errorf("an unchanged option rewrote its rate: version %d → %d", rateAfter.Version, r.Version)
	}
	if r, _ := e.Store.Rate(ctx, catalog.SystemScope(), sid, "S1-P1", "S1-P1-O2"); r.Name != "S1-P1-O2" {
		t.Errorf("the missing option was not created: %+v", r)
	}
}

// TestPlaceholderName_IsNeverTheInternalName: the name a new item gets is
// its id, and something else when the id is the internalName.
func TestPlaceholderName_IsNeverTheInternalName(t *testing.T) {
	tests := []struct {
		name, id, internal, want string
	}{
		{"the id", "P1", "Glacier walk (internal)", "P1"},
		{"id equals the internalName", "glacier", "glacier", "Product "},
		{"id equals it but for case and spaces", "Glacier", " glacier ", "Product "},
		{"long id cut to the catalog's name length", strings.Repeat("x", 1024), "y", strings.Repeat("x", 1000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PlaceholderName("Product", tt.id, tt.internal)
			if strings.EqualFold(strings.TrimSpace(got), strings.TrimSpace(tt.internal)) {
				t.Fatalf("%q is the internalName", got)
			}
			if !strings.HasPrefix(got, tt.want) || len(got) > 1000 {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSyncSupplier_SecondIdenticalSyncPublishesNothing: what did not
// change is not republished (products, rates, availabilities), so a sync
// that finds nothing new produces no events and no notifications.
func TestSyncSupplier_SecondIdenticalSyncPublishesNothing(t *testing.T) {
	e := start(t, envOptions{sim: bookingsim.Config{TimeZone: "Pacific/Auckland"}})
	sy := e.syncer(e.schedule(7))
	if _, err := e.sync(t, sy, 7); err != nil {
		t.Fatal(err)
	}
	if n := e.published(); n != 4+8+8 {
		t.Fatalf("first sync published %d records, want 20 (4 products, 8 rates, 8 availability sets)", n)
	}
	e.clock.add(time.Minute)
	res, err := e.sync(t, sy, 7)
	if err != nil || len(res.Errors) != 0 || res.Availabilities == 0 {
		t.Fatalf("second sync: %+v %v", res, err)
	}
	if n := e.published(); n != 0 {
		t.Fatalf("an identical second sync published %d records", n)
	}
	// A change request over part of the window changes nothing either.
	if _, err := sy.RefreshProduct(ctx, sid, "S1-P1", e.clock.today(2), e.clock.today(4)); err != nil {
		t.Fatal(err)
	}
	if n := e.published(); n != 0 {
		t.Fatalf("an identical partial refresh published %d records", n)
	}
}

// TestSyncSupplier_ItemFailuresArePartial: what fails for one item is one
// error naming it (entity and id, as the cron report reads it) and every
// other item still lands.
func TestSyncSupplier_ItemFailuresArePartial(t *testing.T) {
	tests := []struct {
		name    string
		sim     bookingsim.Config
		fault   faultFunc
		rewrite rewriteFunc
		// wantErr: entity and id of each error; landed: a product that
		// must have availabilities; notLanded: one that must not.
		wantErr   []string
		landed    string
		notLanded string
	}{
		{
			name:    "a product the client rejects by a data rule",
			sim:     bookingsim.Config{Break: []string{bookingsim.BreakAvailabilityTyp}},
			wantErr: []string{"product S1/S1-PX"}, landed: "S1-P1", notLanded: "S1-PX",
		},
		{
			name: "a product whose availability reads fail",
			fault: func(r *http.Request) int {
				if r.URL.Query().Get("productId") == "S1-P3" {
					return http.StatusInternalServerError
				}
				return 0
			},
			wantErr: []string{"option S1/S1-P3/S1-P3-O1", "option S1/S1-P3/S1-P3-O2"}, landed: "S1-P1", notLanded: "S1-P3",
		},
		{
			name: "a product the catalog refuses (a locale that is no BCP 47 tag)",
			rewrite: func(r *http.Request, body any) any {
				if strings.HasSuffix(r.URL.Path, "/products") {
					for _, x := range body.([]any) {
						if p := x.(map[string]any); p["id"] == "S1-P2" {
							p["locale"] = "not a locale"
						}
					}
				}
				return body
			},
			wantErr: []string{"product S1/S1-P2"}, landed: "S1-P4", notLanded: "S1-P2",
		},
		{
			// Written in a supplier-wide bulk, refused as a whole for
			// this one option: the product's other option, and the
			// other products of the bulk, still land.
			name: "an option the catalog refuses (minUnits beyond its bound on travelers)",
			rewrite: func(r *http.Request, body any) any {
				if strings.HasSuffix(r.URL.Path, "/products") {
					for _, x := range body.([]any) {
						if p := x.(map[string]any); p["id"] == "S1-P2" {
							o := p["options"].([]any)[1].(map[string]any)
							o["restrictions"] = map[string]any{"minUnits": 10000000}
						}
					}
				}
				return body
			},
			wantErr: []string{"option S1/S1-P2/S1-P2-O2"}, landed: "S1-P2",
		},
		{
			name: "availabilities the client rejects (a status outside doc 3's list)",
			rewrite: func(r *http.Request, body any) any {
				if r.URL.Query().Get("optionId") == "S1-P1-O2" {
					return mapAvailabilities(body, func(a map[string]any) { a["status"] = "MAYBE" })
				}
				return body
			},
			wantErr: []string{"option S1/S1-P1/S1-P1-O2"}, landed: "S1-P1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t, envOptions{sim: tt.sim})
			e.setFault(tt.fault)
			e.setRewrite(tt.rewrite)
			res, err := e.sync(t, e.syncer(nil), 3)
			if err != nil {
				t.Fatalf("the whole sync failed: %v", err)
			}
			t.Logf("errors: %q", res.Errors)
			named := map[string]bool{}
			for _, text := range res.Errors {
				it := cronreport.ParseError(text)
				named[it.Entity+" "+it.ID] = true
			}
			for _, w := range tt.wantErr {
				if !named[w] {
					t.Errorf("no error names %s: %q", w, res.Errors)
				}
			}
			if len(e.availabilities(t, tt.landed, tt.landed+"-O1")) == 0 {
				t.Errorf("%s did not land", tt.landed)
			}
			if tt.notLanded != "" {
				if set, err := e.Store.Availabilities(ctx, catalog.SystemScope(), sid, tt.notLanded, tt.notLanded+"-O1"); err == nil && len(set.Availabilities) > 0 {
					t.Errorf("%s landed: %d availabilities", tt.notLanded, len(set.Availabilities))
				}
			}
		})
	}
}

// TestSyncSupplier_WholeFailures: what makes the whole sync fail is an
// error (the cron report says the sync failed), and nothing is written.
func TestSyncSupplier_WholeFailures(t *testing.T) {
	e := start(t, envOptions{})
	e.As(t, e.Admin).CreateSupplier(catalogtest.SupplierBody("PARTNER", "P", "P", "k", "s"))
	e.Rec.Reset()
	tests := []struct {
		name  string
		sid   string
		fault faultFunc
		want  error
	}{
		{"unknown supplier", "NOPE", nil, catalog.ErrNotFound},
		{"a partner supplier", "PARTNER", nil, ErrNotBookingSystem},
		{"the product list cannot be read", sid, func(*http.Request) int { return 503 }, bookingsystem.ErrUnavailable},
		{"the booking system refuses our key", sid, func(*http.Request) int { return 401 }, bookingsystem.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.setFault(tt.fault)
			_, err := e.syncer(nil).SyncSupplier(ctx, tt.sid, e.clock.date(0), e.clock.date(2))
			if !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
			noSecret(t, "error", err.Error())
			if n := e.published(); n != 0 {
				t.Fatalf("published %d records", n)
			}
		})
	}
	noSecret(t, "logs", e.Logs.String())
}

// TestSyncSupplier_GoneItemsAreKeptReportedAndEmptied: a product or an
// option the booking system no longer returns stays in the catalog (it
// may be bound), is reported, and has no availability left in the window.
func TestSyncSupplier_GoneItemsAreKeptReportedAndEmptied(t *testing.T) {
	e := start(t, envOptions{})
	sy := e.syncer(nil)
	if _, err := e.sync(t, sy, 3); err != nil {
		t.Fatal(err)
	}
	e.As(t, e.Admin).CreateBinding(sid, "S1-P4", catalogtest.ChannelA, `{}`)
	e.sim.Update(func(c *bookingsim.Config) { c.ProductsPerSupplier, c.OptionsPerProduct = 3, 1 })
	res, err := e.sync(t, sy, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("errors: %q", res.Errors)
	named := map[string]bool{}
	for _, text := range res.Errors {
		it := cronreport.ParseError(text)
		named[it.Entity+" "+it.ID] = true
	}
	for _, w := range []string{"product S1/S1-P4", "option S1/S1-P1/S1-P1-O2", "option S1/S1-P3/S1-P3-O2"} {
		if !named[w] {
			t.Errorf("not reported: %s (%q)", w, res.Errors)
		}
	}
	if _, err := e.Store.Product(ctx, catalog.SystemScope(), sid, "S1-P4"); err != nil {
		t.Fatalf("a gone (and bound) product was deleted: %v", err)
	}
	for _, it := range [][2]string{{"S1-P4", "S1-P4-O1"}, {"S1-P4", "S1-P4-O2"}, {"S1-P1", "S1-P1-O2"}} {
		if as := e.availabilities(t, it[0], it[1]); len(as) != 0 {
			t.Errorf("%s/%s still has %d availabilities", it[0], it[1], len(as))
		}
	}
	if len(e.availabilities(t, "S1-P1", "S1-P1-O1")) == 0 {
		t.Error("an option still offered lost its availability")
	}
}

// TestSyncSupplier_ChunksProductsBeyondTheBulkLimit: more products than
// one catalog bulk write takes (catalog.MaxBulk) all land.
func TestSyncSupplier_ChunksProductsBeyondTheBulkLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("1001 products")
	}
	e := start(t, envOptions{sim: bookingsim.Config{ProductsPerSupplier: catalog.MaxBulk + 1, OptionsPerProduct: 1}})
	sy := New(Options{Catalog: e.Store, Client: e.bsc, Clock: e.clock.now, Concurrency: 8})
	res, err := e.sync(t, sy, 1)
	if err != nil || len(res.Errors) != 0 {
		t.Fatalf("%v %q", err, res.Errors)
	}
	ps, err := e.Store.Products(ctx, catalog.SystemScope(), sid)
	if err != nil || len(ps) != catalog.MaxBulk+1 || res.Products != catalog.MaxBulk+1 {
		t.Fatalf("%d products stored, %d read (%v)", len(ps), res.Products, err)
	}
}

// TestSyncSupplier_OCTODialect: an OCTO booking system is synchronized
// the same way (the client speaks the dialect).
func TestSyncSupplier_OCTODialect(t *testing.T) {
	e := start(t, envOptions{dialect: catalog.ConnectionOCTO})
	res, err := e.sync(t, e.syncer(nil), 2)
	if err != nil || len(res.Errors) != 0 || res.Products != 4 || res.Availabilities == 0 {
		t.Fatalf("%+v %v", res, err)
	}
	// OCTO's ids are local date-times, the same for every option: the
	// catalog's are UUIDs of supplier, product, option and that id, which
	// is kept beside them.
	as := e.availabilities(t, "S1-P1", "S1-P1-O1")
	if len(as) == 0 || as[0].ID != bookingsystem.CatalogAvailabilityID(sid, "S1-P1", "S1-P1-O1", as[0].SystemID) ||
		!strings.HasPrefix(as[0].SystemID, e.clock.today(0)) || as[0].MaxCapacity == nil {
		t.Fatalf("OCTO availabilities: %+v", as)
	}
	other := e.availabilities(t, "S1-P1", "S1-P1-O2")
	if len(other) == 0 || other[0].SystemID != as[0].SystemID || other[0].ID == as[0].ID {
		t.Fatalf("two options' availabilities of one upstream id share a catalog id: %+v %+v", as[0], other)
	}
}

// TestSyncSupplier_WritesThroughTheEmbeddedBroker: the real write path
// (Kafka first, acks=all) carries a full sync.
func TestSyncSupplier_WritesThroughTheEmbeddedBroker(t *testing.T) {
	e := start(t, envOptions{kafka: true})
	res, err := e.sync(t, e.syncer(nil), 2)
	if err != nil || len(res.Errors) != 0 {
		t.Fatalf("%v %q", err, res.Errors)
	}
	if as := e.availabilities(t, "S1-P3", "S1-P3-O2"); len(as) != 6 {
		t.Fatalf("%d availabilities", len(as))
	}
	raw, _ := json.Marshal(e.product(t, "S1-P3"))
	noSecret(t, "product", string(raw))
}

// TestSyncSupplier_WindowStartsOnEachProductsLocalToday: the run's window
// is UTC dates of when it was enqueued, but a product west of UTC is still
// on the day before at 02:00 UTC; its local today is read (and nothing of
// the window is left due), however the run's dates fall.
func TestSyncSupplier_WindowStartsOnEachProductsLocalToday(t *testing.T) {
	tests := []struct {
		name, zone string
		at         time.Time
		wantFirst  string // local date of the first stored availability
	}{
		{"west of UTC, after midnight UTC", "America/Los_Angeles", time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC), "2026-11-21"},
		{"east of UTC, before midnight UTC", "Pacific/Auckland", time.Date(2026, 11, 21, 20, 0, 0, 0, time.UTC), "2026-11-22"},
		{"UTC", "UTC", time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC), "2026-11-22"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t, envOptions{sim: bookingsim.Config{TimeZone: tt.zone, SlotHours: []int{20, 21}}})
			e.clock.set(tt.at)
			sch := e.schedule(3)
			utcToday, _ := time.Parse(time.DateOnly, tt.at.UTC().Format(time.DateOnly))
			if _, err := e.syncer(sch).SyncSupplier(ctx, sid, utcToday, utcToday.AddDate(0, 0, 3)); err != nil {
				t.Fatal(err)
			}
			loc, _ := time.LoadLocation(tt.zone)
			got := e.availabilities(t, "S1-P1", "S1-P1-O1")
			if len(got) == 0 {
				t.Fatal("nothing stored")
			}
			if first := got[0].Start.In(loc).Format(time.DateOnly); first != tt.wantFirst {
				t.Fatalf("first stored day %s, want the product's local today %s", first, tt.wantFirst)
			}
			if last := got[len(got)-1].Start.In(loc).Format(time.DateOnly); last != addDays(tt.wantFirst, 2) {
				t.Fatalf("last stored day %s, want %s (3 days)", last, addDays(tt.wantFirst, 2))
			}
			if n, err := sch.DueCount(ctx, e.clock.now()); err != nil || n != 0 {
				t.Fatalf("%d options due right after the sync (%v)", n, err)
			}
		})
	}
}

// TestSyncSupplier_PastDaysAreDropped: days before the product's local
// today are never read again; a sync drops them instead of keeping them,
// so a rate's stored availabilities do not pile up week after week (until
// the catalog's bound per rate refused every write).
func TestSyncSupplier_PastDaysAreDropped(t *testing.T) {
	e := start(t, envOptions{})
	var counts []int
	for week := range 4 {
		if _, err := e.sync(t, e.syncer(nil), 7); err != nil {
			t.Fatalf("week %d: %v", week, err)
		}
		got := e.availabilities(t, "S1-P1", "S1-P1-O1")
		counts = append(counts, len(got))
		if first := got[0].Start.UTC().Format(time.DateOnly); first < e.clock.today(0) {
			t.Fatalf("week %d: a past day %s is still stored (today %s)", week, first, e.clock.today(0))
		}
		e.clock.add(7 * 24 * time.Hour)
	}
	for _, n := range counts[1:] {
		if n != counts[0] {
			t.Fatalf("stored availabilities by week %v, want the same every week", counts)
		}
	}
}

// TestSyncSupplier_ReadsAtMostConcurrencyAtOnce: however many refreshes
// wait to write, the booking system never has more than Concurrency of a
// sync's availability reads in flight (doc 3 states no rate limit, so the
// bound is ours), and it does have several: the reads run in parallel.
func TestSyncSupplier_ReadsAtMostConcurrencyAtOnce(t *testing.T) {
	const concurrency = 3
	e := start(t, envOptions{sim: bookingsim.Config{ProductsPerSupplier: 12, OptionsPerProduct: 2}})
	var inFlight, most atomic.Int64
	e.setFault(func(r *http.Request) int {
		if strings.HasSuffix(r.URL.Path, "/availability") {
			n := inFlight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(20 * time.Millisecond) // the answer's time at the booking system
			inFlight.Add(-1)
		}
		return 0
	})
	sy := New(Options{Catalog: e.Store, Client: e.bsc, Schedule: e.schedule(3), Clock: e.clock.now, Concurrency: concurrency})
	res, err := e.sync(t, sy, 3)
	if err != nil || len(res.Errors) != 0 || res.Options != 24 {
		t.Fatalf("%+v %v", res, err)
	}
	if m := most.Load(); m > concurrency || m < 2 {
		t.Fatalf("at most %d availability reads in flight, want 2 to %d", m, concurrency)
	}
}

// TestSyncSupplier_WaitingForAReadSlotIsNotTheOptionsTime: a booking
// system slower than OptionTimeout divided by the options waiting for a
// read slot still synchronizes every option: the option's timeout (and
// its lock) start when its read may, not while it waits its turn.
func TestSyncSupplier_WaitingForAReadSlotIsNotTheOptionsTime(t *testing.T) {
	e := start(t, envOptions{sim: bookingsim.Config{ProductsPerSupplier: 12, OptionsPerProduct: 2}})
	e.setFault(func(r *http.Request) int {
		if strings.HasSuffix(r.URL.Path, "/availability") {
			time.Sleep(60 * time.Millisecond) // 8 reads waiting: 480 ms, beyond the 300 ms below
		}
		return 0
	})
	sy := New(Options{Catalog: e.Store, Client: e.bsc, Schedule: e.schedule(3), Clock: e.clock.now, Concurrency: 1,
		OptionTimeout: 300 * time.Millisecond})
	res, err := e.sync(t, sy, 3)
	if err != nil || len(res.Errors) != 0 || res.Options != 24 || res.Availabilities == 0 {
		t.Fatalf("a slow booking system: %+v %v", res, err)
	}
}

package availapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/ingest/partner"
	"github.com/switchbackhq/switchback/internal/availcache"
	"github.com/switchbackhq/switchback/internal/availcache/availcachetest"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/platform/jsonwire"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/internal/simulators/partnersim"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/query/querytest"
	"github.com/switchbackhq/switchback/schemas"
)

// allowLoopback is the fixture's outbound policy, short for these tests.
var allowLoopback = availcachetest.AllowLoopback

// env is the shared fixture (availcachetest.Env) with this package's
// wiring of the service.
type env struct{ *availcachetest.Env }

func newEnv(t *testing.T) *env { return &env{availcachetest.NewEnv(t)} }

func (e *env) service(deadline time.Duration) *availcache.Service {
	return availcache.New(availcache.Options{Redis: e.Redis, Catalog: e.Cat, Partner: partner.NewClient(partner.Options{Outbound: allowLoopback, Timeout: 2 * time.Second}),
		Publisher: e.Pub, Clock: e.Clock.Now, Deadline: deadline})
}

// ---- HTTP ----

type auth struct{}

func (auth) Authenticate(key, _ []byte) (principals.Principal, bool) {
	switch string(key) {
	case "reseller":
		return principals.Principal{ID: "sub-1", Role: principals.RoleReseller, ChannelID: "chan-a"}, true
	case "other":
		return principals.Principal{ID: "sub-2", Role: principals.RoleReseller, ChannelID: "chan-b"}, true
	}
	return principals.Principal{}, false
}

// serve serves the availability routes of svc; the answer calls them.
func serve(t *testing.T, svc *availcache.Service) *querytest.Client {
	t.Helper()
	srv := httpapi.New(httpapi.Options{Principals: auth{}})
	Register(srv, svc)
	return querytest.NewClient(t, querytest.Serve(t, srv))
}

// get calls path as the principal of key and decodes the JSON answer.
func get(t *testing.T, api *querytest.Client, path, key string) (int, map[string]any) {
	t.Helper()
	status, b := api.Do(t, http.MethodGet, path, catalogtest.Cred{Key: key, Secret: "x"}, "")
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: body %s", path, b)
	}
	return status, m
}

func TestHTTP_AvailabilityReads(t *testing.T) {
	e := newEnv(t)
	base := serve(t, e.service(2*time.Second))
	const prod = "/suppliers/S1/products/P1"
	tests := []struct {
		name, path, key string
		status          int
		field           string
	}{
		{"missing start", "/v1.2" + prod + "/availabilities?end=2026-11-23T00:00:00Z", "reseller", 400, "start"},
		{"missing end", "/v1.2" + prod + "/availabilities?start=2026-11-22T00:00:00Z", "reseller", 400, "end"},
		{"invalid start", "/v1.2" + prod + "/availabilities?start=yesterday&end=2026-11-23T00:00:00Z", "reseller", 400, "start"},
		{"end before start", "/v1.2" + prod + "/availabilities?start=2026-11-23T00:00:00Z&end=2026-11-22T00:00:00Z", "reseller", 400, "end"},
		{"unbound rate", "/v1.2" + prod + "/availabilities?start=2026-11-22T00:00:00Z&end=2026-11-23T00:00:00Z&rate_id=R3", "reseller", 404, ""},
		{"other channel", "/v1.2" + prod + "/availabilities?start=2026-11-22T00:00:00Z&end=2026-11-23T00:00:00Z", "other", 404, ""},
		{"list v1.2", "/v1.2" + prod + "/availabilities?start=2026-11-22T00:00:00Z&end=2026-11-23T00:00:00Z", "reseller", 200, ""},
		{"list v1.3", "/v1.3" + prod + "/availabilities?start=2026-11-22T00:00:00Z&end=2026-11-23T00:00:00Z&rate_id=R1", "reseller", 200, ""},
		{"single missing at", "/v1.2" + prod + "/availability?qty=1", "reseller", 400, "at"},
		{"single bad qty", "/v1.2" + prod + "/availability?at=2026-11-22T09:30:00Z&qty=zero", "reseller", 400, "qty"},
		{"single no window", "/v1.2" + prod + "/availability?at=2026-11-22T03:00:00Z", "reseller", 404, ""},
		{"single bookable", "/v1.2" + prod + "/availability?at=2026-11-22T09:30:00Z&qty=0" + "1", "reseller", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := get(t, base, tt.path, tt.key)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %v", status, tt.status, body)
			}
			if meta, _ := body["meta"].(map[string]any); meta == nil || meta["reqId"] == "" {
				t.Fatalf("no meta.reqId: %v", body)
			}
			if tt.field != "" {
				data, _ := body["data"].(map[string]any)
				if data["field"] != tt.field {
					t.Fatalf("data.field = %v, want %s", data["field"], tt.field)
				}
			}
		})
	}
	_, list := get(t, base, "/v1.2"+prod+"/availabilities?start=2026-11-22T00:00:00Z&end=2026-11-23T00:00:00Z", "reseller")
	av := list["availabilities"].(map[string]any)
	byRate := av["byRate"].(map[string]any)
	if len(byRate) != 2 || byRate["R3"] != nil || av["expires"] == nil || av["retrieved"] == nil || av["productId"] != "P1" {
		t.Fatalf("list = %v", av)
	}
	if n := len(av["byProduct"].(map[string]any)["availability"].([]any)); n != 6 {
		t.Fatalf("byProduct has %d availabilities, want 6", n)
	}
}

func TestHTTP_SingleIsNotBookableWhenQuantityExceedsCapacity(t *testing.T) {
	e := newEnv(t)
	e.Sim.Update(func(c *partnersim.Config) { c.MaxCapacity = 5 })
	base := serve(t, e.service(2*time.Second))
	status, body := get(t, base, "/v1.2/suppliers/S1/products/P1/availability?at=2026-11-22T09:30:00Z&qty=6&rate_id=R1", "reseller")
	if status != 200 || body["bookable"] != false {
		t.Fatalf("status %d body %v", status, body)
	}
	a := body["availability"].(map[string]any)
	if a["rateId"] != "R1" || a["start"] != "2026-11-22T09:00:00Z" {
		t.Fatalf("availability %v", a)
	}
}

func FuzzParseParams(f *testing.F) {
	f.Add("2026-11-22T00:00:00Z", "2026-11-23T00:00:00Z", "5")
	f.Add("", "x", "-1")
	f.Add("2026-11-22T00:00:00+14:00", "9999-12-31T23:59:59Z", "99999999999999999999")
	f.Fuzz(func(t *testing.T, start, end, qty string) {
		w, err := parseWindow(start, end, 92*24*time.Hour)
		if err == nil && (!w.start.Before(w.end) || w.end.Sub(w.start) > 92*24*time.Hour) {
			t.Fatalf("accepted window %v", w)
		}
		if _, n, err := parseAt(start, qty); err == nil && (n < 1 || n > 10000) {
			t.Fatalf("accepted qty %d", n)
		}
	})
}

func TestHTTP_PartnerFailureWithoutEntryIs503WithoutPartnerDetails(t *testing.T) {
	e := newEnv(t)
	e.Sim.Update(func(c *partnersim.Config) { c.ErrorRate = 1 })
	base := serve(t, e.service(time.Second))
	status, body := get(t, base, "/v1.2/suppliers/S1/products/P1/availabilities?start=2026-11-22T00:00:00Z&end=2026-11-23T00:00:00Z", "reseller")
	if status != 503 || body["code"] != "UNAVAILABLE" {
		t.Fatalf("status %d body %v", status, body)
	}
	if b, _ := json.Marshal(body); strings.Contains(string(b), "simulated") || strings.Contains(string(b), "127.0.0.1") {
		t.Fatalf("partner details leaked: %s", b)
	}
}

// FuzzAppendOne: the hand-written single availability answer has the bytes
// encoding/json writes for oneResponse (meta.reqId aside: request ids are
// written by jsonwire.AppendASCII everywhere), and is refused exactly when
// encoding/json refuses it.
func FuzzAppendOne(f *testing.F) {
	f.Add("req-1", "a-1", int64(1795856400), int64(1795860000), 3, 5, true, "R1", true)
	f.Add("r", "<&>\u2028\x01\"\\", int64(-62135596800), int64(253402300799), -1, 0, false, "é\xff", false)
	f.Add("r", "x", int64(253402300800), int64(0), 0, 0, false, "", false)
	f.Fuzz(func(t *testing.T, reqID, id string, start, end int64, capacity, maxCapacity int, hasMax bool, rateID string, bookable bool) {
		zone := time.FixedZone("", int(end%(26*3600)))
		a := oneAvailability{Availability: schemas.Availability{ID: id, Start: time.Unix(start, end%1e9).UTC(), End: time.Unix(end, start%1e9).In(zone), Capacity: capacity}, RateID: rateID}
		if hasMax {
			a.MaxCapacity = &maxCapacity
		}
		got, ok := appendOne([]byte("x"), reqID, a, bookable)
		want, err := json.Marshal(struct {
			Availability oneAvailability `json:"availability"`
			Bookable     bool            `json:"bookable"`
		}{a, bookable})
		if ok != (err == nil) {
			t.Fatalf("appendOne ok %v, encoding/json error %v", ok, err)
		}
		if !ok {
			return
		}
		wantAll := `x{"meta":{"reqId":` + string(jsonwire.AppendASCII(nil, reqID)) + `},` + string(want[1:])
		if string(got) != wantAll {
			t.Fatalf("appendOne\n got  %s\n want %s", got, wantAll)
		}
	})
}

package octo_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/internal/availcache"
	"github.com/switchbackhq/switchback/internal/booking"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogredis"
	"github.com/switchbackhq/switchback/internal/platform/domainerr"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/query/octo"
	"github.com/switchbackhq/switchback/schemas"
)

type nopPublisher struct{}

func (nopPublisher) Publish(context.Context, ...stream.Message) error { return nil }

// fakeCatalog sees supplier "sup" with product "prod" and rate "rate"
// (one price "adult"); "down" fails as Redis would.
type fakeCatalog struct{}

var errDown = errors.New("redis: connection refused")

func notFound(what string) error { return domainerr.New("NOT_FOUND", what+" not found") }

func (fakeCatalog) AppendSupplier(_ context.Context, dst []byte, _, sid string, _ catalogredis.SupplierVersion, _ time.Time) ([]byte, error) {
	switch sid {
	case "sup":
		return append(dst, `{"id":"sup","name":"Sup","code":"S","contacts":[{"email":"a@b.example","phone":"+41"}]}`...), nil
	case "down":
		return dst, errDown
	}
	return dst, notFound("supplier")
}

func (fakeCatalog) AppendProducts(_ context.Context, dst []byte, _, _ string, _ time.Time) ([]byte, error) {
	return append(dst, `[{"id":"prod","name":"Prod"}]`...), nil
}

func (fakeCatalog) AppendProduct(_ context.Context, dst []byte, _, _, pid string, _ time.Time) ([]byte, error) {
	if pid != "prod" {
		return dst, notFound("product")
	}
	return append(dst, `{"id":"prod","name":"Prod","timeZone":"Europe/Zurich","deliveryFormats":["QR_CODE","TEXT"],"deliveryMethods":["TICKET"],"instantConfirmation":true,"instantDelivery":true}`...), nil
}

func (fakeCatalog) AppendRates(_ context.Context, dst []byte, _, _, _ string, _ time.Time) ([]byte, error) {
	return append(dst, `[{"id":"rate","name":"Rate","cutoff":120,"minTravelers":1,"maxTravelers":4,"cancelable":true,
"prices":[{"id":"adult","name":"Adult","travelerType":{"ageBand":"ADULT","minAge":18,"maxAge":99}},{"id":"x","travelerType":{"ageBand":"PET"}}]}]`...), nil
}

func (fakeCatalog) ChannelPriceSchedule(context.Context, string, string, string, string, time.Time, time.Time, time.Time) (catalog.PriceSchedule, error) {
	return catalog.PriceSchedule{}, nil
}

// fakeAvailability answers three slots tomorrow at 09:00 UTC, 11:00 and
// 13:00: 10 of 10, 2 of 10, 0 of 10.
type fakeAvailability struct{ day time.Time }

func (f fakeAvailability) Lookup(_ context.Context, _, _, _, _, rid string, _, _ time.Time) ([]availcache.Rate, bool, error) {
	ten := 10
	slot := func(id string, h, capa int) schemas.Availability {
		return schemas.Availability{ID: id, Start: f.day.Add(time.Duration(h) * time.Hour), End: f.day.Add(time.Duration(h+1) * time.Hour), Capacity: capa, MaxCapacity: &ten}
	}
	return []availcache.Rate{{RateID: rid, Availabilities: []schemas.Availability{slot("a9", 9, 10), slot("a11", 11, 2), slot("a13", 13, 0)}}}, false, nil
}

func (fakeAvailability) MaxWindow() time.Duration { return 92 * 24 * time.Hour }

// fakeBookings knows no reservation.
type fakeBookings struct{ octo.Bookings }

func (fakeBookings) HoldDetail(context.Context, principals.Principal, string, string) (schemas.HoldRecord, error) {
	return schemas.HoldRecord{}, booking.ErrNotFound
}

func (fakeBookings) HoldRecord(context.Context, string, string) (schemas.HoldRecord, error) {
	return schemas.HoldRecord{}, booking.ErrNotFound
}

type env struct {
	url               string
	key, secret       string
	operator, secret2 string
}

func start(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	store := principals.NewStore(nopPublisher{})
	res, secret, err := store.Create(ctx, principals.CreateRequest{Role: principals.RoleReseller, ChannelID: "ch-1"})
	if err != nil {
		t.Fatal(err)
	}
	op, secret2, err := store.Create(ctx, principals.CreateRequest{Role: principals.RoleOperator})
	if err != nil {
		t.Fatal(err)
	}
	s := httpapi.New(httpapi.Options{MaxBodyBytes: 1 << 16, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Registry: prometheus.NewRegistry(), Principals: store})
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
	octo.Register(s, octo.New(octo.Options{Catalog: fakeCatalog{}, Availability: fakeAvailability{day: day}, Bookings: fakeBookings{}}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &env{url: "http://" + ln.Addr().String(), key: res.Key, secret: secret, operator: op.Key, secret2: secret2}
}

func (e *env) do(t *testing.T, method, path string, hdr map[string]string, body string) (int, http.Header, map[string]any, []any) {
	t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var obj map[string]any
	var arr []any
	if strings.HasPrefix(string(raw), "[") {
		err = json.Unmarshal(raw, &arr)
	} else {
		err = json.Unmarshal(raw, &obj)
	}
	if err != nil {
		t.Fatalf("%s %s: not JSON: %q", method, path, raw)
	}
	return resp.StatusCode, resp.Header, obj, arr
}

func TestOCTO_ErrorsHaveOCTONamesAndStatus400(t *testing.T) {
	e := start(t)
	bearer := map[string]string{"Authorization": "Bearer " + e.key + ":" + e.secret}
	for _, tc := range []struct {
		name, method, path string
		hdr                map[string]string
		body               string
		want, field, value string
	}{
		{"no credentials", "GET", "/octo/sup/supplier", nil, "", "UNAUTHORIZED", "", ""},
		{"wrong secret", "GET", "/octo/sup/supplier", map[string]string{"Authorization": "Bearer " + e.key + ":nope"}, "", "FORBIDDEN", "", ""},
		{"token without secret", "GET", "/octo/sup/supplier", map[string]string{"Authorization": "Bearer " + e.key}, "", "FORBIDDEN", "", ""},
		{"basic scheme", "GET", "/octo/sup/supplier", map[string]string{"Authorization": "Basic " + e.key}, "", "FORBIDDEN", "", ""},
		{"not a reseller", "GET", "/octo/sup/supplier", map[string]string{"Authorization": "Bearer " + e.operator + ":" + e.secret2}, "", "FORBIDDEN", "", ""},
		{"supplier not on the channel", "GET", "/octo/other/products", bearer, "", "FORBIDDEN", "", ""},
		{"dependency down", "GET", "/octo/down/supplier", bearer, "", "INTERNAL_SERVER_ERROR", "", ""},
		{"product not bound", "GET", "/octo/sup/products/nope", bearer, "", "INVALID_PRODUCT_ID", "productId", "nope"},
		{"option not bound", "POST", "/octo/sup/availability", bearer, `{"productId":"prod","optionId":"nope","localDate":"2030-01-01"}`, "INVALID_OPTION_ID", "optionId", "nope"},
		{"unit not of the option", "POST", "/octo/sup/availability", bearer, `{"productId":"prod","optionId":"rate","localDate":"2030-01-01","units":[{"id":"nope","quantity":1}]}`, "INVALID_UNIT_ID", "unitId", "nope"},
		{"availability id unknown", "POST", "/octo/sup/availability", bearer, `{"productId":"prod","optionId":"rate","availabilityIds":["nope"]}`, "INVALID_AVAILABILITY_ID", "availabilityId", "nope"},
		{"no dates", "POST", "/octo/sup/availability", bearer, `{"productId":"prod","optionId":"rate"}`, "BAD_REQUEST", "", ""},
		{"malformed JSON", "POST", "/octo/sup/availability", bearer, `{"productId":`, "BAD_REQUEST", "", ""},
		{"wrong type", "POST", "/octo/sup/availability", bearer, `{"productId":1}`, "BAD_REQUEST", "", ""},
		{"range too long", "POST", "/octo/sup/availability/calendar", bearer, `{"productId":"prod","optionId":"rate","localDateStart":"2030-01-01","localDateEnd":"2031-01-01"}`, "BAD_REQUEST", "", ""},
		{"no unit items", "POST", "/octo/sup/bookings", bearer, `{"productId":"prod","optionId":"rate","availabilityId":"a9","unitItems":[]}`, "UNPROCESSABLE_ENTITY", "", ""},
		{"more units than the option allows", "POST", "/octo/sup/bookings", bearer, `{"productId":"prod","optionId":"rate","availabilityId":"a9","unitItems":[{"unitId":"adult"},{"unitId":"adult"},{"unitId":"adult"},{"unitId":"adult"},{"unitId":"adult"}]}`, "UNPROCESSABLE_ENTITY", "", ""},
		{"sold out", "POST", "/octo/sup/bookings", bearer, `{"productId":"prod","optionId":"rate","availabilityId":"a13","unitItems":[{"unitId":"adult"}]}`, "UNPROCESSABLE_ENTITY", "", ""},
		{"uuid not a UUID", "POST", "/octo/sup/bookings", bearer, `{"uuid":"x/y","productId":"prod","optionId":"rate","availabilityId":"a9","unitItems":[{"unitId":"adult"}]}`, "INVALID_BOOKING_UUID", "uuid", "x/y"},
		{"unknown booking", "GET", "/octo/sup/bookings/9b2e0bd2-d302-55e1-bfa6-53217225600f", bearer, "", "INVALID_BOOKING_UUID", "uuid", "9b2e0bd2-d302-55e1-bfa6-53217225600f"},
		{"list without filter", "GET", "/octo/sup/bookings", bearer, "", "BAD_REQUEST", "", ""},
		{"no such route", "GET", "/octo/sup/nope", bearer, "", "BAD_REQUEST", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, got, _ := e.do(t, tc.method, tc.path, tc.hdr, tc.body)
			if status != 400 || got["error"] != tc.want {
				t.Fatalf("%d %v, want 400 %s", status, got, tc.want)
			}
			if msg, _ := got["errorMessage"].(string); msg == "" {
				t.Errorf("no errorMessage: %v", got)
			}
			if tc.field != "" && got[tc.field] != tc.value {
				t.Errorf("%v: want %s %q", got, tc.field, tc.value)
			}
			if strings.Contains(got["errorMessage"].(string), "redis") || strings.Contains(got["errorMessage"].(string), e.secret) {
				t.Errorf("errorMessage %q shows a cause or a secret", got["errorMessage"])
			}
		})
	}
}

func TestOCTO_ProductAndAvailabilityMapping(t *testing.T) {
	e := start(t)
	hdr := map[string]string{"X-API-Key": e.key, "X-API-Secret": e.secret, "Octo-Capabilities": "octo/pricing"}
	status, h, p, _ := e.do(t, "GET", "/octo/sup/products/prod", hdr, "")
	if status != 200 || h.Get("Octo-Capabilities") != "" {
		t.Fatalf("%d %v (Octo-Capabilities %q): want 200 and no capability applied", status, p, h.Get("Octo-Capabilities"))
	}
	opt := p["options"].([]any)[0].(map[string]any)
	units := opt["units"].([]any)
	for _, c := range []struct {
		what string
		got  any
		want any
	}{
		{"timeZone", p["timeZone"], "Europe/Zurich"},
		{"deliveryFormats (TEXT has no OCTO name)", len(p["deliveryFormats"].([]any)), 1},
		{"deliveryFormats[0]", p["deliveryFormats"].([]any)[0], "QRCODE"},
		{"option default", opt["default"], true},
		{"cancellationCutoff", opt["cancellationCutoff"], "2 hours"},
		{"cancellationCutoffUnit", opt["cancellationCutoffUnit"], "hour"},
		{"maxUnits", opt["restrictions"].(map[string]any)["maxUnits"], float64(4)},
		{"unit type", units[0].(map[string]any)["type"], "ADULT"},
		{"unit minAge", units[0].(map[string]any)["restrictions"].(map[string]any)["minAge"], float64(18)},
		{"unknown age band", units[1].(map[string]any)["type"], "OTHER"},
		{"no pricing asked for and served", opt["pricingFrom"], nil},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}

	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1).Format("2006-01-02")
	_, _, _, avs := e.do(t, "POST", "/octo/sup/availability", hdr, `{"productId":"prod","optionId":"rate","localDate":"`+day+`","units":[{"id":"adult","quantity":3}]}`)
	want := map[string][2]any{"a9": {"AVAILABLE", true}, "a11": {"LIMITED", false}, "a13": {"SOLD_OUT", false}}
	if len(avs) != 3 {
		t.Fatalf("availabilities %v, want 3", avs)
	}
	for _, a := range avs {
		m := a.(map[string]any)
		w := want[m["id"].(string)]
		if m["status"] != w[0] || m["available"] != w[1] {
			t.Errorf("%v: want status %v, available %v (3 units asked for)", m, w[0], w[1])
		}
		if !strings.HasSuffix(m["localDateTimeStart"].(string), "+01:00") && !strings.HasSuffix(m["localDateTimeStart"].(string), "+02:00") {
			t.Errorf("%v: want Zurich's offset", m["localDateTimeStart"])
		}
	}
	_, _, _, cal := e.do(t, "POST", "/octo/sup/availability/calendar", hdr, `{"productId":"prod","optionId":"rate","localDateStart":"`+day+`","localDateEnd":"`+day+`"}`)
	if len(cal) < 1 || cal[0].(map[string]any)["status"] != "AVAILABLE" || cal[0].(map[string]any)["vacancies"] != float64(12) {
		t.Errorf("calendar %v: want the day AVAILABLE with 12 vacancies", cal)
	}
}

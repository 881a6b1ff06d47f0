package historyapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/platform/warehouse"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/query/querytest"
	"github.com/switchbackhq/switchback/schemas"
)

// One clickhouse-server for the package, a database per test.
func TestMain(m *testing.M) { testharness.Main(m) }

// cred is a test principal; querytest.Principals gives it its secret.
type cred = querytest.Principal

var (
	resellerA = cred{Key: "reseller-a", Role: principals.RoleReseller, Channel: "ch-a"}
	resellerB = cred{Key: "reseller-b", Role: principals.RoleReseller, Channel: "ch-b"}
	operator  = cred{Key: "operator-1", Role: principals.RoleOperator}
)

// ownership owns the suppliers listed for each operator id; err fails it.
type ownership struct {
	owned map[string][]string
	err   error
}

func (o ownership) OwnsSupplier(_ context.Context, operatorID, supplierID string) (bool, error) {
	if o.err != nil {
		return false, o.err
	}
	for _, s := range o.owned[operatorID] {
		if s == supplierID {
			return true, nil
		}
	}
	return false, nil
}

type env struct {
	*querytest.Client
	creds    map[cred]catalogtest.Cred
	ids      map[cred]string // principal id by credential
	replayer *recordingReplayer
}

// serve starts an API server with the history routes on conn (nil: parked)
// and own, and the three test principals.
func serve(t *testing.T, conn driver.Conn, own func(ids map[cred]string) Ownership) *env {
	t.Helper()
	store, creds := querytest.Principals(t, resellerA, resellerB, operator)
	e := &env{creds: map[cred]catalogtest.Cred{}, ids: map[cred]string{}, replayer: &recordingReplayer{}}
	for i, c := range []cred{resellerA, resellerB, operator} {
		e.creds[c], e.ids[c] = creds[i], creds[i].ID
	}
	s := httpapi.New(httpapi.Options{Principals: store, Logger: testharness.Logger(t)})
	var o Ownership
	if own != nil {
		o = own(e.ids)
	}
	Register(s, conn, o, e.replayer)
	e.Client = querytest.NewClient(t, querytest.Serve(t, s))
	e.HTTP.Timeout = 15 * time.Second
	return e
}

func (e *env) get(t *testing.T, c cred, path string) (int, []byte) {
	t.Helper()
	return e.Do(t, http.MethodGet, path, e.creds[c], "")
}

func (e *env) post(t *testing.T, c cred, path, body string) (int, []byte) {
	t.Helper()
	return e.Do(t, http.MethodPost, path, e.creds[c], body)
}

func openClickHouse(t *testing.T) driver.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := warehouse.Open(ctx, testharness.ClickHouse(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := warehouse.Migrate(ctx, conn, schemas.ClickHouseFS()); err != nil {
		t.Fatal(err)
	}
	return conn
}

type deliveryRow struct {
	id, subscriber, typ string
	at                  time.Time
	status              int
	outcome             string
}

// insertDeliveries writes rows as the sink would (explicit columns,
// PrepareBatch).
func insertDeliveries(t *testing.T, conn driver.Conn, rows ...deliveryRow) {
	t.Helper()
	b, err := conn.PrepareBatch(context.Background(), "INSERT INTO history_deliveries (event_id, occurred_at, occurred_ms, delivery_id, subscriber, type, attempt, status, latency_ms, outcome, error)")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := b.Append("ev-"+r.id, r.at, r.at.UnixMilli(), r.id, r.subscriber, r.typ, uint16(1), uint16(r.status), uint32(42), r.outcome, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}
}

type availabilityRow struct {
	id, supplier, product string
	at                    time.Time
	old, new              int32
}

func insertAvailability(t *testing.T, conn driver.Conn, rows ...availabilityRow) {
	t.Helper()
	b, err := conn.PrepareBatch(context.Background(), "INSERT INTO history_availability_changes (event_id, occurred_at, occurred_ms, supplier_id, product_id, rate_id, window_start, window_end, old_vacancies, new_vacancies, old_status, new_status, source)")
	if err != nil {
		t.Fatal(err)
	}
	win := time.Date(2026, 4, 1, 10, 0, 0, 0, time.UTC)
	for _, r := range rows {
		if err := b.Append("ev-"+r.id, r.at, r.at.UnixMilli(), r.supplier, r.product, "r1", win, win.Add(time.Hour), r.old, r.new, "", "", "push"); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}
}

type listBody[T any] struct {
	Items  []T    `json:"items"`
	Paging Paging `json:"paging"`
	Meta   struct {
		ReqID string `json:"reqId"`
	} `json:"meta"`
}

func at(minute int) time.Time { return time.Date(2026, 3, 10, 12, minute, 0, 0, time.UTC) }

func TestDeliveries_FiltersAndPagesTheCallersOwnLog(t *testing.T) {
	conn := openClickHouse(t)
	e := serve(t, conn, nil)
	a, b := e.ids[resellerA], e.ids[resellerB]
	insertDeliveries(t, conn,
		deliveryRow{"d1", a, "availability", at(1), 200, "delivered"},
		deliveryRow{"d2", a, "availability", at(2), 500, "retry"},
		deliveryRow{"d3", a, "booking", at(3), 200, "delivered"},
		deliveryRow{"d4", a, "availability", at(4), 0, "suppressed"},
		deliveryRow{"d5", b, "availability", at(5), 200, "delivered"},
	)
	// The same event again (a replay not merged yet): listed once.
	insertDeliveries(t, conn, deliveryRow{"d1", a, "availability", at(1), 200, "delivered"})

	tests := []struct {
		name     string
		query    string
		wantIDs  string
		wantMore bool
	}{
		{"newest first, own only", "", "d4 d3 d2 d1", false},
		{"by type", "?type=booking", "d3", false},
		{"by HTTP status", "?status=200", "d3 d1", false},
		{"by outcome", "?outcome=suppressed", "d4", false},
		{"from inclusive, to exclusive", "?from=2026-03-10T12:02:00Z&to=2026-03-10T12:04:00Z", "d3 d2", false},
		{"offset with an unencoded + in the zone", "?from=2026-03-10T13:02:00+01:00&offset=1", "d3 d2", false},
		{"first page says more", "?limit=2", "d4 d3", true},
		{"second page", "?limit=2&offset=2", "d2 d1", false},
		{"past the end", "?offset=10", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := e.get(t, resellerA, "/registry/v1.1/deliveries"+tt.query)
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, body)
			}
			var got listBody[Delivery]
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, d := range got.Items {
				ids = append(ids, d.DeliveryID)
			}
			if strings.Join(ids, " ") != tt.wantIDs || got.Paging.More != tt.wantMore || got.Paging.Count != len(ids) {
				t.Errorf("got %v more=%v paging=%+v, want %q more=%v", ids, got.Paging.More, got.Paging, tt.wantIDs, tt.wantMore)
			}
			if got.Meta.ReqID == "" {
				t.Error("meta.reqId missing")
			}
		})
	}

	// One item in full.
	_, body := e.get(t, resellerA, "/registry/v1.1/deliveries?type=booking")
	var one listBody[Delivery]
	if err := json.Unmarshal(body, &one); err != nil {
		t.Fatal(err)
	}
	want := Delivery{DeliveryID: "d3", Type: "booking", Attempt: 1, Status: 200, LatencyMs: 42, Outcome: "delivered", At: at(3)}
	if len(one.Items) != 1 || one.Items[0] != want {
		t.Errorf("item = %+v, want %+v", one.Items, want)
	}
}

func TestAvailability_ListsOnlyOwnedSuppliers(t *testing.T) {
	conn := openClickHouse(t)
	e := serve(t, conn, func(ids map[cred]string) Ownership {
		return ownership{owned: map[string][]string{ids[operator]: {"s1"}}}
	})
	insertAvailability(t, conn,
		availabilityRow{"a1", "s1", "p1", at(1), 5, 4},
		availabilityRow{"a2", "s1", "p2", at(2), 4, 0},
		availabilityRow{"a3", "s1", "p1", at(3), 0, 2},
		availabilityRow{"a4", "s2", "p9", at(4), 9, 8},
	)
	tests := []struct {
		name       string
		query      string
		wantStatus int
		want       string // "product:old>new ..." or the error code
	}{
		{"owned supplier, newest first", "?supplierId=s1", 200, "p1:0>2 p2:4>0 p1:5>4"},
		{"by product and page", "?supplierId=s1&productId=p1&limit=1", 200, "p1:0>2"},
		{"time range", "?supplierId=s1&to=2026-03-10T12:02:00Z", 200, "p1:5>4"},
		{"supplier of another operator", "?supplierId=s2", 403, "FORBIDDEN"},
		{"unknown supplier", "?supplierId=nope", 403, "FORBIDDEN"},
		{"supplierId missing", "", 400, "INVALID_FIELD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := e.get(t, operator, "/operator/v2/history/availability"+tt.query)
			if status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", status, tt.wantStatus, body)
			}
			if status != http.StatusOK {
				if eb := querytest.DecodeError(t, body); string(eb.Code) != tt.want {
					t.Fatalf("code %s, want %s", eb.Code, tt.want)
				}
				return
			}
			var got listBody[AvailabilityChange]
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			var items []string
			for _, c := range got.Items {
				items = append(items, c.ProductID+":"+itoa(c.OldVacancies)+">"+itoa(c.NewVacancies))
			}
			if strings.Join(items, " ") != tt.want {
				t.Errorf("got %v, want %s", items, tt.want)
			}
		})
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestRoutes_ScopeAndParkingWithoutClickHouse needs no server: parameters,
// roles and ownership are checked before ClickHouse is reached, and a
// parked history answers 503 saying why.
func TestRoutes_ScopeAndParkingWithoutClickHouse(t *testing.T) {
	failing := func(map[cred]string) Ownership { return ownership{err: errors.New("catalog down")} }
	owns := func(ids map[cred]string) Ownership {
		return ownership{owned: map[string][]string{ids[operator]: {"s1"}}}
	}
	tests := []struct {
		name       string
		own        func(map[cred]string) Ownership
		who        cred
		path       string
		wantStatus int
		wantCode   string
		wantField  string
	}{
		{"deliveries parked", nil, resellerA, "/registry/v1.1/deliveries", 503, "UNAVAILABLE", ""},
		{"availability parked", owns, operator, "/operator/v2/history/availability?supplierId=s1", 503, "UNAVAILABLE", ""},
		{"operator on the reseller route", nil, operator, "/registry/v1.1/deliveries", 403, "FORBIDDEN", ""},
		{"reseller on the operator route", owns, resellerA, "/operator/v2/history/availability?supplierId=s1", 403, "FORBIDDEN", ""},
		{"no ownership wired denies", nil, operator, "/operator/v2/history/availability?supplierId=s1", 403, "FORBIDDEN", ""},
		{"ownership failing is a server error", failing, operator, "/operator/v2/history/availability?supplierId=s1", 500, "INTERNAL", ""},
		{"unknown type", nil, resellerA, "/registry/v1.1/deliveries?type=weather", 400, "INVALID_FIELD", "type"},
		{"status not a number", nil, resellerA, "/registry/v1.1/deliveries?status=ok", 400, "INVALID_FIELD", "status"},
		{"unknown outcome", nil, resellerA, "/registry/v1.1/deliveries?outcome=lost", 400, "INVALID_FIELD", "outcome"},
		{"limit zero", nil, resellerA, "/registry/v1.1/deliveries?limit=0", 400, "INVALID_FIELD", "limit"},
		{"limit too large", nil, resellerA, "/registry/v1.1/deliveries?limit=1001", 400, "INVALID_FIELD", "limit"},
		{"negative offset", nil, resellerA, "/registry/v1.1/deliveries?offset=-1", 400, "INVALID_FIELD", "offset"},
		{"offset too deep", nil, resellerA, "/registry/v1.1/deliveries?offset=100001", 400, "INVALID_FIELD", "offset"},
		{"from not a time", nil, resellerA, "/registry/v1.1/deliveries?from=yesterday", 400, "INVALID_FIELD", "from"},
		{"to before from", nil, resellerA, "/registry/v1.1/deliveries?from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z", 400, "INVALID_FIELD", "to"},
		{"supplierId missing", owns, operator, "/operator/v2/history/availability", 400, "INVALID_FIELD", "supplierId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := serve(t, nil, tt.own)
			status, body := e.get(t, tt.who, tt.path)
			if status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", status, tt.wantStatus, body)
			}
			eb := querytest.DecodeError(t, body)
			if string(eb.Code) != tt.wantCode || eb.Data["field"] != tt.wantField {
				t.Fatalf("error %+v, want code %s field %q", eb, tt.wantCode, tt.wantField)
			}
			if tt.wantStatus == 503 && !strings.Contains(eb.Message, "no ClickHouse is configured") {
				t.Errorf("503 message %q does not say why", eb.Message)
			}
		})
	}
}

// TestDeliveries_ClickHouseDownIs503: a configured ClickHouse that does not
// answer gives 503 with our message, not the driver's.
func TestDeliveries_ClickHouseDownIs503(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := testharness.ClickHouse(t)
	conn, err := warehouse.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// No migration: the table is missing, which fails like an outage does.
	e := serve(t, conn, nil)
	status, body := e.get(t, resellerA, "/registry/v1.1/deliveries")
	if status != http.StatusServiceUnavailable {
		t.Fatalf("status %d: %s", status, body)
	}
	if eb := querytest.DecodeError(t, body); eb.Code != "UNAVAILABLE" || strings.Contains(eb.Message, "history_deliveries") {
		t.Fatalf("error %+v: want UNAVAILABLE without internals", eb)
	}
}

// FuzzParseDeliveryFilter: any query string is either a filter within
// bounds or an INVALID_FIELD error, never a panic.
func FuzzParseDeliveryFilter(f *testing.F) {
	for _, s := range []string{"", "limit=5&offset=3", "type=booking&status=200", "from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00+01:00", "limit=-1", "from=9999-99"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if _, err := url.ParseQuery(raw); err != nil {
			t.Skip()
		}
		args := argsOf(raw)
		fl, err := parseDeliveryFilter(args)
		if err != nil {
			return
		}
		if fl.limit < 1 || fl.limit > MaxLimit || fl.offset < 0 || fl.offset > MaxOffset {
			t.Fatalf("out of bounds: %+v", fl)
		}
		if !fl.from.IsZero() && !fl.to.IsZero() && !fl.from.Before(fl.to) {
			t.Fatalf("empty range accepted: %+v", fl)
		}
	})
}

func argsOf(raw string) *fasthttp.Args {
	a := new(fasthttp.Args)
	a.Parse(raw)
	return a
}

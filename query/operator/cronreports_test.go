package operator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/catalog/catalogredis"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/cronreport"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/query/operator"
	"github.com/switchbackhq/switchback/query/querytest"
)

type cronClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *cronClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *cronClock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// TestCronReports_EveryRuleAndStatus: spec doc 3 rule 6 over HTTP. The
// list is the past 60 days' summaries (no errorReport), newest first, in
// the caller's scope; the full report has errorReport only when there
// were errors; a non-positive or non-integer id is 400, an unknown one or
// another operator's 404; a 61-day-old report is neither listed nor
// found. The same answers after the view is flushed and rebuilt from the
// report records.
func TestCronReports_EveryRuleAndStatus(t *testing.T) {
	url := testharness.Redis(t)
	ropts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(ropts)
	t.Cleanup(func() { _ = rdb.Close() })
	rec := &catalogtest.Recorder{}
	t0 := time.Date(2026, 1, 1, 6, 0, 0, 0, time.UTC)
	clk := &cronClock{t: t0}
	reports := cronreport.NewStore(cronreport.Options{Redis: rdb, Publisher: rec, Clock: clk.Now})
	cat := catalogredis.NewStore(catalogredis.Options{Redis: rdb, Publisher: &catalogtest.Recorder{}}) // the same view as the API's catalog
	e := querytest.Start(t, querytest.Options{RedisURL: url, Routes: func(s *httpapi.Server) {
		operator.RegisterCronReports(s, cat, reports)
	}})
	e.Must(t, 201, "POST", ch+"/supplier", e.Operator, catalogtest.SupplierBody("s1", "Sup One", "S1", "k", "s"))
	e.Must(t, 201, "POST", ch+"/supplier", e.Operator, catalogtest.SupplierBody("s3", "Sup Three", "S3", "k", "s"))
	e.Must(t, 201, "POST", ch+"/supplier", e.Operator2, catalogtest.SupplierBody("s2", "Sup Two", "S2", "k", "s"))

	ctx := context.Background()
	put := func(id int64, sid string, at time.Time, errs ...string) {
		t.Helper()
		r := cronreport.Report{Summary: cronreport.Summary{ID: id, Inserted: at, ExternalSystemID: sid, ErrorCount: len(errs)},
			ErrorReport: cronreport.NewErrorReport(errs), RunID: "r", RequestKey: fmt.Sprint("r/", id)}
		if err := reports.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	put(1, "s1", t0) // 61 days old below
	now := t0.Add(61 * 24 * time.Hour)
	clk.Set(now)
	put(2, "s1", now.Add(-4*time.Hour))
	put(3, "s2", now.Add(-3*time.Hour), "option o1: 503")
	put(4, "s1", now.Add(-2*time.Hour), "product p1: bad availabilityType", "connection reset")
	put(5, "s3", now.Add(-time.Hour))

	type errBody struct {
		Code string            `json:"code"`
		Data map[string]string `json:"data"`
	}
	listIDs := func(t *testing.T, b []byte) []int64 {
		var items []map[string]json.RawMessage
		if err := json.Unmarshal(b, &items); err != nil {
			t.Fatalf("not an array: %s", b)
		}
		ids := []int64{}
		for _, it := range items {
			if _, ok := it["errorReport"]; ok {
				t.Errorf("a summary carries errorReport: %s", b)
			}
			for _, f := range []string{"id", "inserted", "externalSystemID", "errorCount"} {
				if _, ok := it[f]; !ok {
					t.Errorf("summary without %s: %s", f, b)
				}
			}
			var id int64
			_ = json.Unmarshal(it["id"], &id)
			ids = append(ids, id)
		}
		return ids
	}
	tests := []struct {
		name   string
		cred   func() catalogtest.Cred
		path   string
		status int
		list   []int64 // for 200 lists
		field  string  // for 400: data.field
		check  func(t *testing.T, b []byte)
	}{
		{"operator: own suppliers, past 60 days, newest first", func() catalogtest.Cred { return e.Operator }, "", 200, []int64{5, 4, 2}, "", nil},
		{"operator 2: its own", func() catalogtest.Cred { return e.Operator2 }, "", 200, []int64{3}, "", nil},
		{"admin: all", func() catalogtest.Cred { return e.Admin }, "", 200, []int64{5, 4, 3, 2}, "", nil},
		{"limit", func() catalogtest.Cred { return e.Operator }, "?limit=2", 200, []int64{5, 4}, "", nil},
		{"limit and offset", func() catalogtest.Cred { return e.Operator }, "?limit=2&offset=2", 200, []int64{2}, "", nil},
		{"offset past the end", func() catalogtest.Cred { return e.Operator }, "?offset=10", 200, []int64{}, "", nil},
		{"one supplier", func() catalogtest.Cred { return e.Operator }, "?externalSystemID=s1", 200, []int64{4, 2}, "", nil},
		{"another operator's supplier: empty", func() catalogtest.Cred { return e.Operator }, "?externalSystemID=s2", 200, []int64{}, "", nil},
		{"admin, one supplier", func() catalogtest.Cred { return e.Admin }, "?externalSystemID=s2", 200, []int64{3}, "", nil},
		{"limit 0", func() catalogtest.Cred { return e.Operator }, "?limit=0", 400, nil, "limit", nil},
		{"limit not a number", func() catalogtest.Cred { return e.Operator }, "?limit=ten", 400, nil, "limit", nil},
		{"limit too large", func() catalogtest.Cred { return e.Operator }, "?limit=1001", 400, nil, "limit", nil},
		{"negative offset", func() catalogtest.Cred { return e.Operator }, "?offset=-1", 400, nil, "offset", nil},
		{"bad supplier id", func() catalogtest.Cred { return e.Operator }, "?externalSystemID=a/b", 400, nil, "externalSystemID", nil},
		{"reseller", func() catalogtest.Cred { return e.Reseller1 }, "", 403, nil, "", nil},

		{"full report with errors", func() catalogtest.Cred { return e.Operator }, "/4", 200, nil, "", func(t *testing.T, b []byte) {
			var r struct {
				ID               int64                  `json:"id"`
				ExternalSystemID string                 `json:"externalSystemID"`
				ErrorCount       int                    `json:"errorCount"`
				Inserted         time.Time              `json:"inserted"`
				ErrorReport      []cronreport.ErrorItem `json:"errorReport"`
			}
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			want := []cronreport.ErrorItem{{Entity: "product", ID: "p1", Message: "product p1: bad availabilityType"}, {Message: "connection reset"}}
			if r.ID != 4 || r.ExternalSystemID != "s1" || r.ErrorCount != 2 || !r.Inserted.Equal(now.Add(-2*time.Hour)) ||
				fmt.Sprint(r.ErrorReport) != fmt.Sprint(want) {
				t.Errorf("report %s", b)
			}
		}},
		{"full report without errors: no errorReport", func() catalogtest.Cred { return e.Operator }, "/2", 200, nil, "", func(t *testing.T, b []byte) {
			var r map[string]json.RawMessage
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			if _, ok := r["errorReport"]; ok || string(r["errorCount"]) != "0" || string(r["id"]) != "2" {
				t.Errorf("report %s", b)
			}
		}},
		{"another operator's report: 404", func() catalogtest.Cred { return e.Operator }, "/3", 404, nil, "", nil},
		{"its own operator's: 200", func() catalogtest.Cred { return e.Operator2 }, "/3", 200, nil, "", nil},
		{"admin: any", func() catalogtest.Cred { return e.Admin }, "/5", 200, nil, "", nil},
		{"61 days old: 404", func() catalogtest.Cred { return e.Admin }, "/1", 404, nil, "", nil},
		{"unknown: 404", func() catalogtest.Cred { return e.Admin }, "/999", 404, nil, "", nil},
		{"largest int64, unknown: 404", func() catalogtest.Cred { return e.Admin }, "/9223372036854775807", 404, nil, "", nil},
		{"id 0", func() catalogtest.Cred { return e.Admin }, "/0", 400, nil, "id", nil},
		{"id -1", func() catalogtest.Cred { return e.Admin }, "/-1", 400, nil, "id", nil},
		{"id 1.5", func() catalogtest.Cred { return e.Admin }, "/1.5", 400, nil, "id", nil},
		{"id abc", func() catalogtest.Cred { return e.Admin }, "/abc", 400, nil, "id", nil},
		{"id 1e3", func() catalogtest.Cred { return e.Admin }, "/1e3", 400, nil, "id", nil},
		{"id +2", func() catalogtest.Cred { return e.Admin }, "/+2", 400, nil, "id", nil},
		{"id past int64: a positive integer no report has", func() catalogtest.Cred { return e.Admin }, "/99999999999999999999", 404, nil, "", nil},
		{"reseller, full report", func() catalogtest.Cred { return e.Reseller1 }, "/2", 403, nil, "", nil},
	}
	run := func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				status, b := e.Do(t, "GET", op+"/cron/reports"+tt.path, tt.cred(), "")
				if status != tt.status {
					t.Fatalf("status %d, want %d: %s", status, tt.status, b)
				}
				switch {
				case tt.status == 400:
					var eb errBody
					if err := json.Unmarshal(b, &eb); err != nil || eb.Code != "INVALID_FIELD" || eb.Data["field"] != tt.field {
						t.Errorf("error body %s, want INVALID_FIELD on %s", b, tt.field)
					}
				case tt.status == 404:
					var eb errBody
					if err := json.Unmarshal(b, &eb); err != nil || eb.Code != "NOT_FOUND" {
						t.Errorf("error body %s, want NOT_FOUND", b)
					}
				case tt.list != nil:
					if got := listIDs(t, b); fmt.Sprint(got) != fmt.Sprint(tt.list) {
						t.Errorf("ids %v, want %v", got, tt.list)
					}
				}
				if tt.check != nil {
					tt.check(t, b)
				}
			})
		}
	}
	t.Run("live", run)
	// The cron reports' view flushed (the catalog's keys are kept).
	keys, err := rdb.Keys(ctx, "{sb:cronreports}:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) > 0 {
		if err := rdb.Del(ctx, keys...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if b := e.Must(t, 200, "GET", op+"/cron/reports", e.Admin, ""); string(b) != "[]" {
		t.Fatalf("flushed view still answers %s", b)
	}
	for _, m := range rec.Messages() { // the topic's records, replayed
		if _, err := reports.HandleMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("rebuilt", run)
}

package bookingsim_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
)

var t0 = time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)

func do(t *testing.T, url, method, key, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw json.RawMessage
	_ = json.NewDecoder(resp.Body).Decode(&raw)
	return resp.StatusCode, raw
}

func TestServer_AuthRoutesAndCalls(t *testing.T) {
	s := bookingsim.New(bookingsim.Config{APIKey: "k", Clock: func() time.Time { return t0 }})
	ts := httptest.NewServer(s)
	defer ts.Close()
	tests := []struct {
		name, method, path, key, body string
		status                        int
	}{
		{"no auth", "GET", "/suppliers", "", "", 401},
		{"wrong key", "GET", "/suppliers", "x", "", 401},
		{"suppliers", "GET", "/suppliers", "k", "", 200},
		{"products", "GET", "/suppliers/S1/products", "k", "", 200},
		{"unknown supplier", "GET", "/suppliers/S3/products", "k", "", 404},
		{"availability", "GET", "/suppliers/S1/availability?productId=S1-P1&optionId=S1-P1-O1&localDateStart=2026-11-23&localDateEnd=2026-11-24", "k", "", 200},
		{"availability RFC 3339 dates", "GET", "/suppliers/S1/availability?productId=S1-P1&optionId=S1-P1-O1&localDateStart=2026-11-23T00:00:00Z&localDateEnd=2026-11-24T00:00:00Z", "k", "", 200},
		{"availability bad window", "GET", "/suppliers/S1/availability?productId=S1-P1&optionId=S1-P1-O1&localDateStart=2026-11-24&localDateEnd=2026-11-23", "k", "", 400},
		{"booking unknown field", "POST", "/suppliers/S1/bookings", "k", `{"uuid":"0b7e1c2a-3f4d-4e5f-8a9b-1c2d3e4f5a6b","bogus":1}`, 400},
		{"unknown booking", "GET", "/suppliers/S1/bookings/0b7e1c2a-3f4d-4e5f-8a9b-1c2d3e4f5a6b", "k", "", 404},
		{"extend unknown order", "POST", "/suppliers/S1/orders/O9/extend", "k", `{}`, 404},
		{"no route", "GET", "/nowhere", "k", "", 404},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if st, body := do(t, ts.URL+tt.path, tt.method, tt.key, tt.body); st != tt.status {
				t.Fatalf("status %d, want %d: %s", st, tt.status, body)
			}
			if s.Calls() != int64(i+1) {
				t.Fatalf("Calls = %d", s.Calls())
			}
		})
	}
}

func TestServer_AvailabilityOfBothTypes(t *testing.T) {
	s := bookingsim.New(bookingsim.Config{Clock: func() time.Time { return t0 }})
	ts := httptest.NewServer(s)
	defer ts.Close()
	for _, tt := range []struct {
		product string
		n       int
		free    bool
	}{{"S1-P1", 3, false}, {"S1-P2", 2, true}} {
		_, body := do(t, ts.URL+"/suppliers/S1/availability?productId="+tt.product+"&optionId="+tt.product+"-O1&localDateStart=2026-11-23&localDateEnd=2026-11-24", "GET", "", "")
		var as []struct {
			Status    string `json:"status"`
			Vacancies *int   `json:"vacancies"`
		}
		if err := json.Unmarshal(body, &as); err != nil || len(as) != tt.n {
			t.Fatalf("%s: %s", tt.product, body)
		}
		for _, a := range as {
			if (a.Status == "FREESALE") != tt.free || (a.Vacancies == nil) != tt.free {
				t.Fatalf("%s: %+v", tt.product, a)
			}
		}
	}
}

func TestServer_HoldTakesVacancies(t *testing.T) {
	s := bookingsim.New(bookingsim.Config{Clock: func() time.Time { return t0 }, MaxCapacity: 1000})
	ts := httptest.NewServer(s)
	defer ts.Close()
	avail := func() (string, int) {
		_, body := do(t, ts.URL+"/suppliers/S1/availability?productId=S1-P1&optionId=S1-P1-O1&localDateStart=2026-11-23&localDateEnd=2026-11-24", "GET", "", "")
		var as []struct {
			ID        string `json:"id"`
			Status    string `json:"status"`
			Vacancies *int   `json:"vacancies"`
		}
		_ = json.Unmarshal(body, &as)
		for _, a := range as {
			if a.Status == "AVAILABLE" && *a.Vacancies > 3 {
				return a.ID, *a.Vacancies
			}
		}
		t.Fatal("no available slot")
		return "", 0
	}
	id, before := avail()
	st, body := do(t, ts.URL+"/suppliers/S1/bookings", "POST", "", `{"uuid":"0b7e1c2a-3f4d-4e5f-8a9b-1c2d3e4f5a6b","channelName":"c","channelId":"6f1c3a52-8a0e-4c55-9d57-2f1b0e7b9a10","productId":"S1-P1","optionId":"S1-P1-O1","availabilityId":"`+id+`","unitItems":[{"unitId":"adult"},{"unitId":"child"}],"holdExpirationMinutes":15}`)
	if st != 200 || !strings.Contains(string(body), `"ON_HOLD"`) {
		t.Fatalf("create: %d %s", st, body)
	}
	if _, after := avail(); after != before-2 {
		t.Fatalf("vacancies %d → %d, want −2", before, after)
	}
}

func TestServer_InjectFault_FailsTheChosenCallsOnly(t *testing.T) {
	s := bookingsim.New(bookingsim.Config{Clock: func() time.Time { return t0 }})
	ts := httptest.NewServer(s)
	defer ts.Close()
	s.InjectFault(bookingsim.Fault{Method: "GET", PathSuffix: "/products", Skip: 1, Times: 2, Status: 503})
	tests := []struct {
		name, method, path string
		status             int
	}{
		{"first match served (Skip)", "GET", "/suppliers/S1/products", 200},
		{"other route untouched", "GET", "/suppliers", 200},
		{"second match fails", "GET", "/suppliers/S2/products", 503},
		{"third match fails", "GET", "/suppliers/S1/products", 503},
		{"served again after Times", "GET", "/suppliers/S1/products", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if st, body := do(t, ts.URL+tt.path, tt.method, "", ""); st != tt.status {
				t.Fatalf("status %d, want %d: %s", st, tt.status, body)
			}
		})
	}

	// Lost: the call is served, its answer replaced.
	s.InjectFault(bookingsim.Fault{Method: "POST", PathSuffix: "/bookings", Lost: true})
	const u = "0b7e1c2a-3f4d-4e5f-8a9b-1c2d3e4f5a6b"
	body := `{"uuid":"` + u + `","channelName":"c","channelId":"6f1c3a52-8a0e-4c55-9d57-2f1b0e7b9a10","productId":"S1-P2","optionId":"S1-P2-O1","availabilityId":"2026-11-23T09:00:00Z","unitItems":[{"unitId":"adult"}],"holdExpirationMinutes":15}`
	if st, _ := do(t, ts.URL+"/suppliers/S1/bookings", "POST", "", body); st != 500 {
		t.Fatalf("lost answer: status %d, want 500", st)
	}
	if got := s.BookingStatus(u); got != "ON_HOLD" {
		t.Fatalf("the booking whose answer was lost is %q, want ON_HOLD (made)", got)
	}
	s.ClearFaults()
	if st, _ := do(t, ts.URL+"/suppliers/S1/bookings", "POST", "", body); st != 200 {
		t.Fatalf("after ClearFaults: status %d, want 200 (a replay)", st)
	}
}

func TestServer_RejectRepeatedConfirm(t *testing.T) {
	const u = "0b7e1c2a-3f4d-4e5f-8a9b-1c2d3e4f5a6b"
	create := `{"uuid":"` + u + `","channelName":"c","channelId":"6f1c3a52-8a0e-4c55-9d57-2f1b0e7b9a10","productId":"S1-P2","optionId":"S1-P2-O1",` +
		`"availabilityId":"2026-11-23T09:00:00Z","unitItems":[{"unitId":"adult"}],"holdExpirationMinutes":15,"orderId":"O1"}`
	tests := []struct {
		name   string
		reject bool
		path   string // the confirm
		second int    // status of the second confirm
	}{
		{"order, default: the current state", false, "/suppliers/S1/orders/O1/confirm", 200},
		{"order, switched on: 400", true, "/suppliers/S1/orders/O1/confirm", 400},
		{"booking, default: the current state", false, "/suppliers/S1/bookings/" + u + "/confirm", 200},
		{"booking, switched on: 400", true, "/suppliers/S1/bookings/" + u + "/confirm", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := bookingsim.New(bookingsim.Config{Clock: func() time.Time { return t0 }, RejectRepeatedConfirm: tt.reject})
			ts := httptest.NewServer(s)
			defer ts.Close()
			if st, body := do(t, ts.URL+"/suppliers/S1/bookings", "POST", "", create); st != 200 {
				t.Fatalf("create: %d %s", st, body)
			}
			if st, body := do(t, ts.URL+tt.path, "POST", "", `{}`); st != 200 {
				t.Fatalf("first confirm: %d %s", st, body)
			}
			if st, body := do(t, ts.URL+tt.path, "POST", "", `{}`); st != tt.second {
				t.Fatalf("second confirm: %d %s, want %d", st, body, tt.second)
			}
			if got := s.BookingStatus(u); got != "CONFIRMED" {
				t.Fatalf("booking %s, want CONFIRMED", got)
			}
		})
	}
}

func TestServer_InjectFault_BodyAndDelay(t *testing.T) {
	s := bookingsim.New(bookingsim.Config{Clock: func() time.Time { return t0 }})
	ts := httptest.NewServer(s)
	defer ts.Close()
	create := func(u, option string) string {
		return `{"uuid":"` + u + `","channelName":"c","channelId":"6f1c3a52-8a0e-4c55-9d57-2f1b0e7b9a10","productId":"S1-P2","optionId":"` + option +
			`","availabilityId":"2026-11-23T09:00:00Z","unitItems":[{"unitId":"adult"}],"holdExpirationMinutes":15}`
	}
	const u1, u2 = "0b7e1c2a-3f4d-4e5f-8a9b-1c2d3e4f5a61", "0b7e1c2a-3f4d-4e5f-8a9b-1c2d3e4f5a62"
	// BodyContains: only the call for option O2 fails, whatever its order.
	s.InjectFault(bookingsim.Fault{Method: "POST", PathSuffix: "/bookings", BodyContains: `"S1-P2-O2"`, Status: 503})
	if st, body := do(t, ts.URL+"/suppliers/S1/bookings", "POST", "", create(u1, "S1-P2-O1")); st != 200 {
		t.Fatalf("O1: %d %s", st, body)
	}
	if st, _ := do(t, ts.URL+"/suppliers/S1/bookings", "POST", "", create(u2, "S1-P2-O2")); st != 503 || s.BookingStatus(u2) != "" {
		t.Fatalf("O2: %d, booking %q; want 503 and none made", st, s.BookingStatus(u2))
	}
	s.ClearFaults()
	// Delay: served at once, answered late with the real answer.
	const delay = 150 * time.Millisecond
	s.InjectFault(bookingsim.Fault{Method: "GET", PathSuffix: "/bookings/" + u1, Delay: delay})
	start := time.Now()
	if st, body := do(t, ts.URL+"/suppliers/S1/bookings/"+u1, "GET", "", ""); st != 200 || !strings.Contains(string(body), `"ON_HOLD"`) || time.Since(start) < delay {
		t.Fatalf("delayed: %d %s after %s", st, body, time.Since(start))
	}
}

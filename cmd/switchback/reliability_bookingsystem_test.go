package main

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/cmd/switchback/internal/app"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
)

// TestReliability_BookingSystemSlowFailingGarbage is issue 9's "booking
// system slow, failing or answering garbage", over the built binary: a
// supplier on the simulated booking system (spec doc 3, internal/simulators/bookingsim)
// behind the fault switch of the partner test. The operator's change
// notifications (each one a refresh through the v2 client) are the
// traffic. For each fault (failing with 500, answering garbage, and in the
// long form slow past the client's 5 s timeout and dropping connections):
//
//   - a change notification ends FAILED, its errors saying what went wrong
//     in words and never holding the booking system's token;
//   - after consecutive failures the booking system's breaker opens
//     (switchback_ingest_bookingsystem_breaker_open = 1) and further
//     refreshes fail without calling it;
//   - healthy again, the breaker closes by itself after its cooldown and a
//     change notification SUCCEEDS.
//
// The process's goroutines, fds and heap stay within a tolerance of where
// they were after the warm-up.
func TestReliability_BookingSystemSlowFailingGarbage(t *testing.T) {
	form := reliabilityForm(t)
	cycles := byForm(form, 1, 3)
	modes := byForm(form, []string{partnerFailing, partnerGarbage}, []string{partnerSlow, partnerFailing, partnerGarbage, partnerReset})
	const token = "bs-reliability-token-5c2e"
	sim := bookingsim.New(bookingsim.Config{APIKey: token})
	fp := &faultyPartner{slow: 6 * time.Second}
	fp.mode.Store(partnerOK)
	bs := httptest.NewServer(fp.wrap(sim))
	t.Cleanup(bs.Close)

	p := startBinary(t, relEnv()...)
	base := "http://" + p.api
	op := api{base, "demo-operator", "demo-operator-secret"}
	// The simulator's names: supplier S1, product S1-P1, options S1-P1-O1
	// and -O2 (our rates).
	const sup, prod = "S1", "S1-P1"
	pbase := "/channel/v1.2/suppliers/" + sup + "/products/" + prod
	op.must(t, "POST", "/channel/v1.2/suppliers", `{"id":"S1","name":"Booking System Tours","code":"BST","connection":{"kind":"bookingsystem","baseUrl":"`+bs.URL+`","credentials":{"bearerToken":"`+token+`"}}}`, 201)
	op.must(t, "POST", "/channel/v1.2/suppliers/"+sup+"/products", catalogtest.ProductBody(prod, "Glacier", "d"), 201)
	op.must(t, "POST", pbase+"/rates", catalogtest.RateBody("S1-P1-O1", "Option 1"), 201)
	op.must(t, "POST", pbase+"/rates", catalogtest.RateBody("S1-P1-O2", "Option 2"), 201)
	op.must(t, "POST", pbase+"/channels/"+app.DemoChannelID, `{}`, 201)

	// request posts a change notification and returns it once finished.
	type finished struct {
		Status string   `json:"status"`
		Errors []string `json:"errors"`
	}
	request := func() (finished, string) {
		t.Helper()
		raw := op.must(t, "POST", "/operator/v2/notifications?supplierId="+sup+"&productId="+prod, "", 201)
		var created struct {
			Notification struct{ ID string } `json:"notification"`
		}
		if err := json.Unmarshal(raw, &created); err != nil {
			t.Fatal(err)
		}
		var got struct {
			Notification finished `json:"notification"`
		}
		waitUntil(t, "change notification finished", 3*time.Minute, func() bool {
			status, raw, err := op.call("GET", "/operator/v2/notifications/"+created.Notification.ID, "")
			if err != nil || status != 200 {
				return false
			}
			_ = json.Unmarshal(raw, &got)
			s := got.Notification.Status
			return s != "WAITING" && s != "WORKING"
		})
		return got.Notification, string(raw)
	}
	if n, _ := request(); n.Status != "SUCCEEDED" {
		t.Fatalf("warm-up change notification: %+v", n)
	}
	// The baseline once the process stopped growing by itself (as in the
	// partner test): with the query tier's catalog copy on by default, its
	// followers' connections to the broker come up in the first seconds
	// (CI at 01:20: +92 goroutines, +46 fds charged to one fault cycle).
	before := stableFigures(t, p.ops)

	var requests, failedClearly, succeeded, wrong, opened, closed int
	for c := range cycles {
		for _, mode := range modes {
			fp.mode.Store(mode)
			isOpen := false
			for i := 0; i < 12 && !isOpen; i++ {
				n, _ := request()
				requests++
				switch {
				case n.Status == "FAILED" && len(n.Errors) > 0 && !strings.Contains(strings.Join(n.Errors, " "), token):
					failedClearly++
					if i == 0 {
						t.Logf("booking system %s: the request FAILED with %q", mode, n.Errors[0])
					}
				default:
					wrong++
					t.Errorf("cycle %d, booking system %s: change notification %+v, want FAILED with its errors (and no token)", c, mode, n)
				}
				isOpen = metricValue(t, p.ops, "switchback_ingest_bookingsystem_breaker_open") == 1
			}
			if !isOpen {
				t.Fatalf("cycle %d, booking system %s: breaker not open after 12 failed change notifications", c, mode)
			}
			opened++
			callsBefore := fp.calls.Load()
			n, _ := request()
			requests++
			if n.Status != "FAILED" {
				wrong++
				t.Errorf("cycle %d, %s, breaker open: %+v, want FAILED", c, mode, n)
			} else {
				failedClearly++
			}
			if calls := fp.calls.Load() - callsBefore; calls > 1 {
				t.Errorf("cycle %d, %s: breaker open but the booking system was called %d times", c, mode, calls)
			}
			fp.mode.Store(partnerOK)
			waitUntil(t, fmt.Sprintf("cycle %d after %s: a change notification succeeds", c, mode), 2*time.Minute, func() bool {
				n, _ := request()
				requests++
				if n.Status == "SUCCEEDED" {
					succeeded++
					return true
				}
				if n.Status == "FAILED" && len(n.Errors) > 0 {
					failedClearly++
				} else {
					wrong++
					t.Errorf("cycle %d after %s: %+v while the breaker closes", c, mode, n)
				}
				time.Sleep(time.Second)
				return false
			})
			if metricValue(t, p.ops, "switchback_ingest_bookingsystem_breaker_open") != 0 {
				t.Errorf("cycle %d after %s: refreshes work but the breaker gauge is not 0", c, mode)
			}
			closed++
		}
	}
	after := settledFigures(t, p.ops)
	grew := growth(before, after, 50, 20, 1.5)
	t.Logf("RELIABILITY fault=bookingsystem-faults form=%s cycles=%d modes=%s change_notifications=%d failed_clearly=%d succeeded=%d wrong=%d breaker_opened=%d breaker_closed=%d calls=%d before=[%s] after=[%s]",
		form, cycles, strings.Join(modes, ","), requests, failedClearly, succeeded, wrong, opened, closed, fp.calls.Load(), before, after)
	for _, g := range grew {
		t.Errorf("grew over the booking system faults: %s", g)
	}
	p.stop(t)
}

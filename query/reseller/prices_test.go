package reseller_test

import (
	"testing"

	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/query/querytest"
)

// TestPriceSchedule_OperatorWritesResellerReadsThroughTheBinding: the
// operator writes a rate's schedule (validated, versioned); a reseller
// reads it only for a rate bound to its channel, with the prices its
// binding's priceTags let it see, limited to start..end.
func TestPriceSchedule_OperatorWritesResellerReadsThroughTheBinding(t *testing.T) {
	e := querytest.Start(t, querytest.Options{Quiet: true})
	seed(t, e)
	const r1Path = ch + "/suppliers/s1/products/p1/rates/r1/priceschedule"
	body := `{"entries":[
{"from":"2027-02-01","until":"2027-02-28","prices":[{"id":"pub","labels":["public"],"retail":{"amount":30,"currency":"EUR"}},{"id":"net","labels":["public","b2b"],"net":{"amount":21,"currency":"EUR"}}]},
{"from":"2027-01-01","until":"2027-01-31","prices":[{"id":"pub","labels":["public"],"retail":{"amount":25,"currency":"EUR"}}]}]}`

	writes := []struct {
		name string
		who  catalogtest.Cred
		path string
		body string
		want int
	}{
		{"another operator's supplier", e.Operator2, r1Path, body, 404},
		{"a reseller cannot write", e.Reseller1, r1Path, body, 403},
		{"unknown rate", e.Operator, ch + "/suppliers/s1/products/p1/rates/nope/priceschedule", body, 404},
		{"overlapping entries", e.Operator, r1Path, `{"entries":[{"from":"2027-01-01","until":"2027-01-10","prices":[]},{"from":"2027-01-10","until":"2027-01-11","prices":[]}]}`, 400},
		{"unknown field", e.Operator, r1Path, `{"entries":[],"extra":1}`, 400},
		{"valid", e.Operator, r1Path, body, 200},
		{"valid again, the same: still version 1", e.Operator, r1Path, body, 200},
	}
	for _, w := range writes {
		t.Run("write "+w.name, func(t *testing.T) {
			if status, b := e.Do(t, "PUT", w.path, w.who, w.body); status != w.want {
				t.Fatalf("status %d, want %d: %s", status, w.want, b)
			}
		})
	}

	r1V12 := "/v1.2/suppliers/s1/products/p1/rates/r1/priceschedule"
	check(t, e, []read{
		{name: "operator reads every price, sorted, version 1", who: op, path: r1Path, want: 200,
			contains: []string{`"version":1`, `"from":"2027-01-01"`, `"id":"pub"`, `"id":"net"`}},
		{name: "reseller sees the b2b prices of its binding", who: r1, path: r1V12, want: 200,
			contains: []string{`"rateId":"r1"`, `"from":"2027-01-01"`, `"from":"2027-02-01"`, `"id":"net"`, `"reqId"`}, absent: []string{`"id":"pub"`}},
		{name: "the same under v1.3", who: r1, path: "/v1.3/suppliers/s1/products/p1/rates/r1/priceschedule", want: 200,
			contains: []string{`"id":"net"`}},
		{name: "start..end keeps the overlapping entries", who: r1, path: r1V12 + "?start=2027-02-10&end=2027-03-01", want: 200,
			contains: []string{`"from":"2027-02-01"`}, absent: []string{`"from":"2027-01-01"`}},
		{name: "RFC 3339 start is taken as its date", who: r1, path: r1V12 + "?start=2027-02-01T10:00:00Z", want: 200,
			contains: []string{`"from":"2027-02-01"`}, absent: []string{`"from":"2027-01-01"`}},
		{name: "bad start", who: r1, path: r1V12 + "?start=soon", want: 400, contains: []string{`"start"`}},
		{name: "end before start", who: r1, path: r1V12 + "?start=2027-02-10&end=2027-02-01", want: 400, contains: []string{`"end"`}},
		{name: "rate not bound to the channel", who: r1, path: "/v1.2/suppliers/s1/products/p1/rates/r2/priceschedule", want: 404},
		{name: "product not bound to the reseller's channel", who: r2, path: r1V12, want: 404},
	})
}

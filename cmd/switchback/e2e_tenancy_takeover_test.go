package main

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/platform/outbound/outboundtest"
	"github.com/switchbackhq/switchback/internal/simulators/partnersim"
	"github.com/switchbackhq/switchback/schemas"
)

// takeover is the matrix's issue 18 phase, after the route rows: ids that
// cannot be taken over and ids that collide without leaking.
//
//   - Operator A's supplier with a live booking cannot be deleted (409 with
//     the error object); B cannot delete it (404).
//   - A changes the supplier's connection to another system: the
//     booking's cancel is refused (409), its read serves the record, and
//     the other system is never called; with the connection restored the
//     cancel goes to the system the booking was made through.
//   - Once final, the supplier is deleted; its id stays A's: B creating it
//     gets the 409 of an id in use, word for word the answer for a live
//     id, naming nobody; A may create it again.
//   - The hold and booking ids A and B both used (the matrix's rows) are
//     two holds and two bookings: each channel reads its own.
//
// It returns how many checks it made and how many went wrong.
func (w *tenancyWorld) takeover(t *testing.T) (checks, wrong int) {
	t.Helper()
	check := func(ok bool, format string, args ...any) {
		t.Helper()
		checks++
		if !ok {
			wrong++
			t.Errorf(format, args...)
		}
	}
	key, secret := w.newID("pk-c"), w.newID("psec-c")
	w.secrets = append(w.secrets, key, secret)
	supC, prodC, rateC := w.newID("sup-c"), w.newID("prod-c"), w.newID("rate-c")
	sim := partnersim.New(partnersim.Config{APIKey: key, APISecret: secret, Rates: map[string][]string{prodC: {rateC}}})
	simSrv := httptest.NewServer(sim)
	t.Cleanup(simSrv.Close)
	moved := outboundtest.NewServer(t, nil) // the system the connection is moved to
	body := func(base string) string {
		return strings.Replace(catalogtest.SupplierBody(supC, "Charlie Tours", "CC", key, secret), "https://partner.example.com/api/", base, 1)
	}
	chSup := "/channel/v1.2/suppliers/" + supC
	chProd := chSup + "/products/" + prodC
	w.must(w.opA, "POST", "/channel/v1.2/suppliers", body(simSrv.URL), 201)
	w.must(w.opA, "POST", chSup+"/products", catalogtest.ProductBody(prodC, "Cliffs", "About the cliffs"), 201)
	w.must(w.opA, "POST", chProd+"/rates", catalogtest.RateBody(rateC, "Adult"), 201)
	w.must(w.opA, "POST", chProd+"/channels/"+w.chA, fmt.Sprintf(`{"priceAt":"PRICE_AT_SALE","rateIds":[%q]}`, rateC), 201)
	hold, book := w.newID("hold-c"), w.newID("book-c")
	w.eventually(w.resA, "POST", "/v1.2/holds", fmt.Sprintf(`{"hold":{"id":%q,"items":[{"supplierId":%q,"productId":%q,"rateId":%q,"quantity":1,"at":%q}]}}`,
		hold, supC, prodC, rateC, w.at), 201, nil)
	w.must(w.resA, "POST", "/v1.2/bookings", fmt.Sprintf(`{"booking":{"id":%q,"holdId":%q,"items":[{"supplierId":%q,"productId":%q,"rateId":%q,"quantity":1,"startTime":%q}]}}`,
		book, hold, supC, prodC, rateC, w.at), 201)
	// The product goes (unbound first): only the booking holds the
	// supplier now.
	w.must(w.opA, "DELETE", chProd+"/channels/"+w.chA, "", 204)
	w.must(w.opA, "DELETE", chProd, "", 204)

	r := w.do(t, w.opA, "DELETE", chSup, "")
	check(r.status == 409 && r.obj()["code"] == "CONFLICT" && strings.Contains(string(r.raw), "not final"),
		"deleting a supplier with a live booking: %d %s, want 409 CONFLICT", r.status, r.raw)
	r = w.do(t, w.opB, "DELETE", chSup, "")
	check(r.status == 404, "B deleting A's supplier: %d %s, want 404", r.status, r.raw)

	// The connection moved: nothing of the booking is sent there.
	w.must(w.opA, "PUT", chSup, strings.Replace(body(moved.URL), `"credentials":{"apiKey":"`+key+`","apiSecret":"`+secret+`"}`, `"credentials":{"set":true}`, 1), 200)
	r = w.do(t, w.resA, "PUT", "/v1.2/bookings/cancel/"+book, "")
	check(r.status == 409 && r.obj()["code"] == "CONFLICT" && strings.Contains(string(r.raw), "connection changed"),
		"cancel after the supplier's connection changed: %d %s, want 409 CONFLICT", r.status, r.raw)
	r = w.do(t, w.resA, "GET", "/v1.2/bookings/"+book, "")
	check(r.status == 200 && nestedString(r.obj(), "booking", "status") == schemas.BookingOpen,
		"read after the connection changed: %d %s, want 200 with the recorded OPEN booking", r.status, r.raw)
	check(moved.Conns.Load() == 0, "the system the connection moved to got %d connections, want 0", moved.Conns.Load())
	w.must(w.opA, "PUT", chSup, strings.Replace(body(simSrv.URL), `"credentials":{"apiKey":"`+key+`","apiSecret":"`+secret+`"}`, `"credentials":{"set":true}`, 1), 200)
	r = w.do(t, w.resA, "PUT", "/v1.2/bookings/cancel/"+book, "")
	check(r.status == 204 && len(r.raw) == 0, "cancel with the connection restored: %d %s, want 204", r.status, r.raw)
	r = w.do(t, w.resA, "GET", "/v1.2/bookings/"+book, "")
	check(r.status == 200 && nestedString(r.obj(), "booking", "status") == schemas.BookingCancelled,
		"read after the cancel: %d %s, want 200 CANCELLED", r.status, r.raw)

	// Final now: deleted; the id stays A's.
	r = w.do(t, w.opA, "DELETE", chSup, "")
	check(r.status == 204, "deleting the supplier once its booking is final: %d %s, want 204", r.status, r.raw)
	taken := w.do(t, w.opB, "POST", "/channel/v1.2/suppliers", strings.Replace(body(moved.URL), "Charlie", w.pwned, 1))
	live := w.do(t, w.opB, "POST", "/channel/v1.2/suppliers", strings.Replace(strings.Replace(body(moved.URL), supC, w.supA, 1), "Charlie", w.pwned, 1))
	msg := func(r matrixReply) string {
		return strings.NewReplacer(supC, "<id>", w.supA, "<id>").Replace(fmt.Sprint(r.obj()["message"]))
	}
	check(taken.status == 409 && taken.obj()["code"] == "CONFLICT" && live.status == 409 && msg(taken) == msg(live),
		"B creating A's deleted supplier id: %d %s; a live id: %d %s: want the same 409", taken.status, taken.raw, live.status, live.raw)
	for _, leak := range []string{w.opA.id, w.opA.key, "operator A", "deleted"} {
		check(!strings.Contains(string(taken.raw), leak), "the refusal of a deleted id tells %q: %s", leak, taken.raw)
	}
	r = w.do(t, w.opB, "GET", chSup, "")
	check(r.status == 404, "B reading the id it could not take: %d %s, want 404", r.status, r.raw)
	r = w.do(t, w.opA, "POST", "/channel/v1.2/suppliers", body(simSrv.URL))
	check(r.status == 201, "A creating its own deleted supplier id again: %d %s, want 201", r.status, r.raw)

	// The ids A and B both used are two holds and two bookings.
	for _, c := range []struct {
		who  *matrixActor
		path string
		has  string
		not  string
	}{
		{w.resA, "/v1.2/holds/" + w.hA[0], w.supA, w.supB},
		{w.resB, "/v1.2/holds/" + w.hA[0], w.supB, w.supA},
		{w.resA, "/v1.2/bookings/" + w.bA[0], w.supA, w.supB},
		{w.resB, "/v1.2/bookings/" + w.bA[0], w.supB, w.supA},
	} {
		r := w.do(t, c.who, "GET", c.path, "")
		check(r.status == 200 && strings.Contains(string(r.raw), c.has) && !strings.Contains(string(r.raw), c.not),
			"GET %s as %s: %d %s, want its own channel's (%s)", c.path, c.who.label, r.status, r.raw, c.has)
	}
	return checks, wrong
}

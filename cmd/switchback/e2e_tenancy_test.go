package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/cronreport"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/simulators/partnersim"
	"github.com/switchbackhq/switchback/schemas"
)

// TestE2E_TenancyMatrix is issue 9's cross-tenant matrix over the built
// binary. Two tenants of each kind are set up over HTTP: operators A and B
// with a supplier, product, rates, availabilities, a price schedule, a
// binding to their reseller's channel and a change notification request;
// resellers A and B on those channels with a rule of every type, holds,
// bookings at the simulated partners, and delivery logs. Then every route
// the binary registers (read from its own route metrics, so that a route
// added without a row fails this test) is called:
//
//   - by tenant A with its own credentials: the exact 2xx (the positive
//     control, so the matrix cannot pass vacuously);
//   - by tenant B with B's credentials on A's ids: the exact refusal, 404
//     for ids out of scope (docs/decisions.md "Scope"), 403 where the
//     decisions say so (operator history), or the caller's own scope (200,
//     lists and metadata), the documented 409 of a taken id, or the
//     documented 400 of an item not bound to the caller's channel;
//   - by every role that does not have the route (A's and B's principal of
//     that role): 403 FORBIDDEN, the one answer of the role check (spec doc
//     3, Authentication rule 2: 403 when the permissions are insufficient);
//   - with A's key and another principal's secret: 401.
//
// A refusal (403, 404) of B's is sent again with A's ids replaced by ids
// nobody has and must be the same answer: B cannot tell A's ids from no
// ids.
//
// Every answer to anyone but A is checked to hold none of A's ids, names,
// urls, keys or secrets that its request did not carry, and no answer to
// anyone holds any principal secret or partner credential. Writes by the
// others carry a marker, and after the matrix A's data is read back
// unchanged; B's webhook sink received nothing of A's. Then the ids of
// issue 18: a supplier id cannot be taken over, bookings never follow a
// changed connection, and hold and booking ids are per channel (takeover).
func TestE2E_TenancyMatrix(t *testing.T) {
	w := newTenancyWorld(t)
	rows := w.rows()

	registered := scrapeRoutes(t, w.p)
	w.coverage(t, registered, rows)
	before := scrapeRoutes(t, w.p)
	sent := map[string]int{}
	failedRows := 0
	for _, r := range rows {
		if !r.registered {
			continue
		}
		if !t.Run(r.method+" "+r.route, func(t *testing.T) { sent[r.key()] += w.run(t, r) }) {
			failedRows++
		}
	}
	// Every request reached the route its row is about, and no other: a
	// path that matched another pattern (or none) would show here.
	after := scrapeRoutes(t, w.p)
	for _, r := range rows {
		if !r.registered {
			continue
		}
		if got := after[r.key()] - before[r.key()]; got != sent[r.key()] {
			t.Errorf("%s: the route counted %d requests, the matrix sent %d", r.key(), got, sent[r.key()])
		}
	}
	var total int
	var kinds []string
	for k, n := range w.tally {
		total += n
		kinds = append(kinds, fmt.Sprintf("%s ×%d", k, n))
	}
	sort.Strings(kinds)
	t.Logf("tenancy matrix: %d routes, %d calls: %s", len(sent), total, strings.Join(kinds, ", "))
	w.integrity(t)
	checks, wrong := w.takeover(t)
	t.Logf("RELIABILITY fault=cross-tenant routes=%d calls=%d routes_with_a_wrong_answer=%d takeover_and_collision_checks=%d wrong=%d",
		len(sent), total, failedRows, checks, wrong)
	w.p.stop(t)
}

// Marker groups: who may see a marker. An actor sees the groups it is
// entitled to; every other group's markers are leaks in its answers.
const (
	gOpA    = "operator A"
	gCatA   = "catalog A"        // operator A's suppliers, products, rates
	gChanID = "channel A"        // the channel itself: operators list every channel
	gChanA  = "channel A's data" // holds and bookings of channel A
	gResA   = "reseller A"
	gResA2  = "reseller A2"
	gResA3  = "reseller A3"
)

// matrixActor is one principal of the matrix.
type matrixActor struct {
	label           string
	role            string
	id, key, secret string
	sees            []string // marker groups it is entitled to
}

// tenancyWorld is the running binary and everything the matrix set up.
type tenancyWorld struct {
	t    *testing.T
	p    *proc
	api  string
	sink *sink
	ch   bool // ClickHouse up: the history routes answer

	admin, opA, opB, resA, resA2, resA3, resB, resB2 *matrixActor
	revoked                                          *matrixActor // revoked by the admin's DELETE row

	tally   map[string]int    // calls by kind, for the log
	marks   map[string]string // marker -> group
	secrets []string          // never in any answer
	pwned   string            // carried by every write of the others

	chA, chB, chS1, chS2, chX                              string
	supA, prodA, rateA, codeA                              string
	supB, prodB, rateB                                     string
	supADel, prodADel, rateADel                            string
	supABody, prodABody, rateABody, availABody, schedABody string
	at                                                     string // start of the held and booked window

	ruleA, urlA, keyA            map[string]string // reseller A's rules by type
	ruleA2                       map[string]string
	ruleB                        map[string]string
	pathA, pathB, pathA3, pathB2 string

	hA                   [6]string // reseller A's holds; [0] booked by bA[0], [1] by bA[1], [4] by bA[2], [5] by bA[3]
	bA                   [4]string // [0]'s ids are also taken by B in B's channel (ids are per channel)
	hB1, hB2             string    // B's holds: [1] booked by bB1, [2] for B's booking of id bA[0]
	bB1                  string
	holdBodyA, bookBodyA string
	// A's holds for the OCTO rows: [0] carries reseller reference octoRef
	// (read, updated, extended), [1] confirmed, [2] cancelled; availA
	// the availability A's OCTO reservation names.
	oA                   [3]string
	octoRef, octoReserve string

	crA       string
	dlvFailed string // reseller A's product delivery that failed (replayable)
	dlvOK     string
	cronA     int64
	from, to  string // replay range
}

func (w *tenancyWorld) newID(prefix string) string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// unknownLike is an id nobody has, of the same form as m: digits for a
// numeric id (a cron report's), so that the twin request is refused for
// the id being unknown, not for its form.
func (w *tenancyWorld) unknownLike(m string) string {
	numeric := m != ""
	for _, c := range m {
		if c < '0' || c > '9' {
			numeric = false
		}
	}
	if !numeric {
		return w.newID("unknown")
	}
	for {
		b := make([]byte, len(m))
		_, _ = rand.Read(b)
		for i := range b {
			b[i] = '0' + b[i]%10
		}
		b[0] = '1' + b[0]%9
		if u := string(b); u != m && w.marks[u] == "" {
			return u
		}
	}
}

// mark records v as a marker of group g and returns it.
func (w *tenancyWorld) mark(g, v string) string {
	w.marks[v] = g
	return v
}

// matrixReply is an answer: status and body as received.
type matrixReply struct {
	status int
	raw    []byte
}

func (r matrixReply) obj() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.raw, &m)
	return m
}

func (w *tenancyWorld) call(t *testing.T, a *matrixActor, key, secret, method, path, body string) matrixReply {
	t.Helper()
	hr, err := http.NewRequest(method, w.api+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("X-API-Key", key)
	hr.Header.Set("X-API-Secret", secret)
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatalf("%s %s as %s: %v", method, path, a.label, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if strings.Contains(resp.Header.Get("Content-Type"), "json") {
		if dup := testharness.DuplicateKey(raw); dup != "" { // every route, every role: no answer has one
			t.Errorf("%s %s as %s: the answer has a duplicate JSON key %s: %s", method, path, a.label, dup, raw)
		}
	}
	return matrixReply{status: resp.StatusCode, raw: raw}
}

func (w *tenancyWorld) do(t *testing.T, a *matrixActor, method, path, body string) matrixReply {
	t.Helper()
	return w.call(t, a, a.key, a.secret, method, path, body)
}

// must is a setup call that has to answer want.
func (w *tenancyWorld) must(a *matrixActor, method, path, body string, want int) map[string]any {
	w.t.Helper()
	r := w.do(w.t, a, method, path, body)
	if r.status != want {
		w.t.Fatalf("setup: %s %s as %s: %d %s, want %d", method, path, a.label, r.status, r.raw, want)
	}
	return r.obj()
}

// eventually polls a call until it answers want.
func (w *tenancyWorld) eventually(a *matrixActor, method, path, body string, want int, ok func(matrixReply) bool) matrixReply {
	w.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := w.do(w.t, a, method, path, body)
		if r.status == want && (ok == nil || ok(r)) {
			return r
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("setup: %s %s as %s: %d %s within 30s, want %d", method, path, a.label, r.status, r.raw, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (w *tenancyWorld) principal(label, role, channel string, sees ...string) *matrixActor {
	w.t.Helper()
	name := label + " " + w.newID("n")
	body := fmt.Sprintf(`{"role":%q,"name":%q}`, role, name)
	if channel != "" {
		body = fmt.Sprintf(`{"role":%q,"name":%q,"channelId":%q}`, role, name, channel)
	}
	got := w.must(w.admin, "POST", "/admin/v1/principals", body, 201)
	a := &matrixActor{label: label, role: role, id: got["id"].(string), key: got["key"].(string), secret: got["secret"].(string), sees: sees}
	w.secrets = append(w.secrets, a.secret)
	if len(sees) > 0 { // a tenant A principal: its identity is A's
		for _, v := range []string{a.id, a.key, name} {
			w.mark(sees[0], v)
		}
	}
	return a
}

func newTenancyWorld(t *testing.T) *tenancyWorld {
	w := &tenancyWorld{t: t, marks: map[string]string{}, tally: map[string]int{}, ruleA: map[string]string{}, urlA: map[string]string{},
		keyA: map[string]string{}, ruleA2: map[string]string{}, ruleB: map[string]string{}}
	w.pwned = w.newID("pwned")
	w.supA, w.prodA, w.rateA = w.mark(gCatA, w.newID("sup-a")), w.mark(gCatA, w.newID("prod-a")), w.mark(gCatA, w.newID("rate-a"))
	w.supB, w.prodB, w.rateB = w.newID("sup-b"), w.newID("prod-b"), w.newID("rate-b")
	w.supADel, w.prodADel, w.rateADel = w.mark(gCatA, w.newID("sup-a-del")), w.mark(gCatA, w.newID("prod-a-del")), w.mark(gCatA, w.newID("rate-a-del"))

	// Two partners, each with its own credentials: a supplier's partner
	// key and secret are tenant secrets no answer may carry.
	partnerKeyA, partnerSecretA := w.newID("pk-a"), w.newID("psec-a")
	partnerKeyB, partnerSecretB := w.newID("pk-b"), w.newID("psec-b")
	w.secrets = append(w.secrets, partnerKeyA, partnerSecretA, partnerKeyB, partnerSecretB)
	simA := httptest.NewServer(partnersim.New(partnersim.Config{APIKey: partnerKeyA, APISecret: partnerSecretA,
		Rates: map[string][]string{w.prodA: {w.rateA}}}))
	t.Cleanup(simA.Close)
	simB := httptest.NewServer(partnersim.New(partnersim.Config{APIKey: partnerKeyB, APISecret: partnerSecretB,
		Rates: map[string][]string{w.prodB: {w.rateB}}}))
	t.Cleanup(simB.Close)

	w.p = startBinary(t, "SWITCHBACK_WEBHOOK_ALLOW_HTTP=true", "SWITCHBACK_WEBHOOK_ALLOW_PRIVATE=true",
		"SWITCHBACK_DISPATCH_RETRY_SCHEDULE=100ms,100ms")
	w.api = "http://" + w.p.api
	w.sink = newSink(t)
	w.ch = clickHouseUp(t, w.p)
	w.admin = &matrixActor{label: "admin", role: "admin", key: "demo-admin", secret: "demo-admin-secret"}
	w.secrets = append(w.secrets, "demo-admin-secret", "demo-operator-secret", "demo-reseller-secret")
	setupStart := time.Now().UTC()

	// Channels: A's and B's, and spares whose bindings the owner's deletes
	// consume (chS1, chS2) and whose record the admin's PUT changes (chX).
	w.chA = w.mark(gChanID, w.newID("ch-a"))
	chAName, chACompany := w.mark(gChanID, w.newID("Alpha channel")), w.mark(gChanID, w.newID("Alpha Co"))
	w.must(w.admin, "POST", "/admin/v1/channels", fmt.Sprintf(`{"id":%q,"name":%q,"companyName":%q}`, w.chA, chAName, chACompany), 201)
	for _, c := range []*string{&w.chB, &w.chS1, &w.chS2, &w.chX} {
		*c = w.newID("ch")
		w.must(w.admin, "POST", "/admin/v1/channels", fmt.Sprintf(`{"id":%q,"name":"Channel %s","companyName":"Co"}`, *c, *c), 201)
	}

	w.opA = w.principal("operator A", "operator", "", gOpA, gCatA)
	w.opB = w.principal("operator B", "operator", "")
	w.resA = w.principal("reseller A", "reseller", w.chA, gResA, gChanA, gCatA, gChanID)
	w.resA2 = w.principal("reseller A2", "reseller", w.chA, gResA2, gChanA, gCatA, gChanID)
	w.resA3 = w.principal("reseller A3", "reseller", w.chA, gResA3, gChanA, gCatA, gChanID)
	w.resB = w.principal("reseller B", "reseller", w.chB)
	w.resB2 = w.principal("reseller B2", "reseller", w.chB)

	// Rules of every type, before the catalogs, so that A's catalog
	// changes notify A's subscribers (and must reach no one of B): A's
	// (marked), A2's (marked, consumed by the owner's deletes), B's.
	pathA, pathA2 := "/"+w.mark(gResA, w.newID("ra")), "/"+w.mark(gResA2, w.newID("ra2"))
	w.pathB = "/" + w.newID("rb")
	pathB := w.pathB
	w.pathA3, w.pathB2 = "/"+w.mark(gResA3, w.newID("ra3")), "/"+w.newID("rb2")
	for _, typ := range schemas.NotificationTypes() {
		for _, r := range []struct {
			who   *matrixActor
			path  string
			group string
			ids   map[string]string
		}{{w.resA, pathA, gResA, w.ruleA}, {w.resA2, pathA2, gResA2, w.ruleA2}, {w.resB, pathB, "", w.ruleB}} {
			url := w.sink.url + r.path + "/" + typ
			got := w.must(r.who, "POST", "/registry/v1.1"+crudPathOf(typ), fmt.Sprintf(`{"url":%q}`, url), 201)
			r.ids[typ] = got["id"].(string)
			if r.group != "" {
				w.mark(r.group, r.ids[typ])
				w.mark(r.group, got["securityKey"].(string))
			}
			if r.who == w.resA {
				w.urlA[typ], w.keyA[typ] = url, got["securityKey"].(string)
			}
		}
	}
	w.must(w.resA, "PUT", "/registry/v1.1/metadata", `{"throttleDelay":"137ms"}`, 200)
	w.mark(gResA, "137ms")

	// Catalogs.
	w.codeA = w.mark(gCatA, strings.ToUpper(w.newID("CA")))
	supName := w.mark(gCatA, w.newID("Alpha Tours"))
	w.supABody = strings.Replace(catalogtest.SupplierBody(w.supA, supName, w.codeA, partnerKeyA, partnerSecretA),
		"https://partner.example.com/api/", simA.URL, 1)
	w.mark(gCatA, simA.URL)
	w.prodABody = catalogtest.ProductBody(w.prodA, w.mark(gCatA, w.newID("Glacier")), w.mark(gCatA, w.newID("About the glacier")))
	w.rateABody = catalogtest.RateBody(w.rateA, w.mark(gCatA, w.newID("Adult")))
	supBBody := strings.Replace(catalogtest.SupplierBody(w.supB, "Bravo Tours", "CB", partnerKeyB, partnerSecretB),
		"https://partner.example.com/api/", simB.URL, 1)
	day := time.Now().UTC().Truncate(24 * time.Hour)
	w.at = day.AddDate(0, 0, 2).Add(9 * time.Hour).Format(time.RFC3339)
	availID := w.mark(gCatA, w.newID("av-a"))
	w.availABody = fmt.Sprintf(`{"availabilities":[{"id":%q,"start":%q,"end":%q,"capacity":5}]}`,
		availID, w.at, day.AddDate(0, 0, 2).Add(11*time.Hour).Format(time.RFC3339))
	w.schedABody = fmt.Sprintf(`{"entries":[{"from":%q,"until":%q,"prices":[{"id":%q,"labels":["public"],"retail":{"amount":12,"currency":"EUR"}}]}]}`,
		day.AddDate(0, 0, 1).Format(time.DateOnly), day.AddDate(0, 0, 20).Format(time.DateOnly), w.mark(gCatA, w.newID("pp-a")))
	for _, s := range []struct {
		who               *matrixActor
		sup, prod, rate   string
		supBody, prodBody string
		rateBody, channel string
	}{
		{w.opA, w.supA, w.prodA, w.rateA, w.supABody, w.prodABody, w.rateABody, w.chA},
		{w.opB, w.supB, w.prodB, w.rateB, supBBody, catalogtest.ProductBody(w.prodB, "Canyon", "About the canyon"), catalogtest.RateBody(w.rateB, "Adult"), w.chB},
	} {
		base := "/channel/v1.2/suppliers/" + s.sup + "/products/" + s.prod
		w.must(s.who, "POST", "/channel/v1.2/suppliers", s.supBody, 201)
		w.must(s.who, "POST", "/channel/v1.2/suppliers/"+s.sup+"/products", s.prodBody, 201)
		w.must(s.who, "POST", base+"/rates", s.rateBody, 201)
		w.must(s.who, "POST", base+"/channels/"+s.channel, fmt.Sprintf(`{"priceAt":"PRICE_AT_SALE","rateIds":[%q]}`, s.rate), 201)
	}
	baseA := "/channel/v1.2/suppliers/" + w.supA + "/products/" + w.prodA
	w.must(w.opA, "PUT", baseA+"/rates/"+w.rateA+"/availabilities", w.availABody, 200)
	w.must(w.opA, "PUT", baseA+"/rates/"+w.rateA+"/priceschedule", w.schedABody, 200)
	// What the owner's deletes consume.
	w.must(w.opA, "POST", "/channel/v1.2/suppliers", catalogtest.SupplierBody(w.supADel, "Spare", "SPARE", "k", "s"), 201)
	w.must(w.opA, "POST", "/channel/v1.2/suppliers/"+w.supA+"/products", catalogtest.ProductBody(w.prodADel, "Spare", "Spare"), 201)
	w.must(w.opA, "POST", baseA+"/rates", catalogtest.RateBody(w.rateADel, "Spare"), 201)
	for _, c := range []string{w.chS1, w.chS2} {
		w.must(w.opA, "POST", baseA+"/channels/"+c, fmt.Sprintf(`{"priceAt":"PRICE_AT_SALE","rateIds":[%q]}`, w.rateA), 201)
	}

	// A's binding reached A's subscriber: A's notifications flow, so B's
	// sink receiving none of them (integrity) is not vacuous.
	w.sink.waitFor(t, pathA+"/"+schemas.TypeChannelBinding, 1, 30*time.Second)
	w.pathA = pathA

	// Holds and bookings at the partners, once the bindings reached the
	// resellers' view.
	w.eventually(w.resA, "GET", "/v1.2/suppliers/"+w.supA, "", 200, nil)
	w.eventually(w.resB, "GET", "/v1.2/suppliers/"+w.supB, "", 200, nil)
	holdBody := func(id, sup, prod, rate string) string {
		return fmt.Sprintf(`{"hold":{"id":%q,"items":[{"supplierId":%q,"productId":%q,"rateId":%q,"quantity":1,"at":%q}]}}`, id, sup, prod, rate, w.at)
	}
	bookBody := func(id, hold, ref, sup, prod, rate string) string {
		return fmt.Sprintf(`{"booking":{"id":%q,"holdId":%q,"resellerBookingRef":%q,"items":[{"supplierId":%q,"productId":%q,"rateId":%q,"quantity":1,"startTime":%q}]}}`,
			id, hold, ref, sup, prod, rate, w.at)
	}
	for i := 0; i <= 5; i++ {
		w.hA[i] = w.mark(gChanA, w.newID("hold-a"))
		body := holdBody(w.hA[i], w.supA, w.prodA, w.rateA)
		if i == 0 {
			w.eventually(w.resA, "POST", "/v1.2/holds", body, 201, nil)
			continue
		}
		if i == 1 {
			w.holdBodyA = body
		}
		w.must(w.resA, "POST", "/v1.2/holds", body, 201)
	}
	for i, h := range map[int]int{0: 0, 1: 1, 2: 4, 3: 5} {
		w.bA[i] = w.mark(gChanA, w.newID("book-a"))
		body := bookBody(w.bA[i], w.hA[h], w.mark(gChanA, w.newID("REF-A")), w.supA, w.prodA, w.rateA)
		if i == 1 {
			w.bookBodyA = body
		}
		w.must(w.resA, "POST", "/v1.2/bookings", body, 201)
	}
	w.octoRef = w.mark(gChanA, w.newID("OREF-A"))
	for i := range w.oA {
		w.oA[i] = w.mark(gChanA, w.newID("hold-o"))
		body := holdBody(w.oA[i], w.supA, w.prodA, w.rateA)
		if i == 0 {
			body = strings.Replace(body, `{"hold":{`, `{"hold":{"ext":{"resellerReference":"`+w.octoRef+`"},`, 1)
		}
		w.must(w.resA, "POST", "/v1.2/holds", body, 201)
	}
	// A's OCTO reservation, of a slot its partner has room in: the
	// owner's POST row retries it (the same booking, whatever the slot's
	// vacancies by then).
	avail := fmt.Sprintf(`{"productId":%q,"optionId":%q,"localDateStart":%q,"localDateEnd":%q}`, w.prodA, w.rateA,
		day.AddDate(0, 0, 1).Format(time.DateOnly), day.AddDate(0, 0, 3).Format(time.DateOnly))
	var slots []map[string]any
	_ = json.Unmarshal(w.eventually(w.resA, "POST", "/octo/"+w.supA+"/availability", avail, 200, nil).raw, &slots)
	for _, a := range slots {
		if a["available"] == true && w.octoReserve == "" {
			w.octoReserve = fmt.Sprintf(`{"uuid":%q,"productId":%q,"optionId":%q,"availabilityId":%q,"unitItems":[{"unitId":"p-std"}]}`,
				w.mark(gChanA, uuid.NewString()), w.prodA, w.rateA, a["id"])
		}
	}
	if w.octoReserve == "" {
		t.Fatalf("setup: no available slot for A's OCTO reservation: %v", slots)
	}
	w.must(w.resA, "POST", "/octo/"+w.supA+"/bookings", w.octoReserve, 200)
	w.hB1, w.hB2, w.bB1 = w.newID("hold-b"), w.newID("hold-b"), w.newID("book-b")
	w.eventually(w.resB, "POST", "/v1.2/holds", holdBody(w.hB1, w.supB, w.prodB, w.rateB), 201, nil)
	w.must(w.resB, "POST", "/v1.2/holds", holdBody(w.hB2, w.supB, w.prodB, w.rateB), 201)
	w.must(w.resB, "POST", "/v1.2/bookings", bookBody(w.bB1, w.hB1, "REF-B", w.supB, w.prodB, w.rateB), 201)

	// Change notification requests.
	n := w.must(w.opA, "POST", "/operator/v2/notifications?supplierId="+w.supA+"&productId="+w.prodA, "", 201)
	w.crA = w.mark(gOpA, nestedString(n, "notification", "id"))
	w.must(w.opB, "POST", "/operator/v2/notifications?supplierId="+w.supB+"&productId="+w.prodB, "", 201)

	// Delivery logs: one of A's product notifications fails (its sink
	// answers 500 through the short retry schedule), so that A has
	// something to replay; a supplier notification is delivered; B gets a
	// delivered one of its own.
	w.dlvFailed, w.dlvOK = w.mark(gResA, w.newID("dlv-a")), w.mark(gResA, w.newID("dlv-a"))
	w.sink.script(pathA+"/product", 500)
	publish(t, w.p.kafka,
		productNotification(w.dlvFailed, w.resA.id, w.supA, w.prodA),
		supplierNotification(w.dlvOK, w.resA.id, w.supA),
		productNotification(w.newID("dlv-b"), w.resB.id, w.supB, w.prodB))
	if w.ch {
		w.eventually(w.resA, "GET", "/registry/v1.1/deliveries?type=product&outcome=failed&limit=1000", "", 200,
			func(r matrixReply) bool { return strings.Contains(string(r.raw), w.dlvFailed) })
	} else {
		t.Log("ClickHouse parked: the history routes are checked for their role refusals only")
	}
	w.sink.script(pathA+"/product", 200)
	w.from = setupStart.Add(-10 * time.Minute).Format(time.RFC3339)
	w.to = time.Now().UTC().Add(10 * time.Minute).Format(time.RFC3339)

	w.seedCronReports()
	return w
}

func crudPathOf(typ string) string {
	if typ == schemas.TypeChannelBinding {
		return "/channelbindings"
	}
	return "/" + typ
}

func productNotification(id, subscriber, supplierID, productID string) schemas.Notification {
	payload, _ := json.Marshal(schemas.ProductPayload{SupplierID: supplierID, ProductID: productID, Operation: "updated"})
	return schemas.Notification{ID: id, Subscriber: subscriber, Type: schemas.TypeProduct, EntityKey: supplierID + "/" + productID,
		Payload: payload, CreatedAt: time.Now().UTC()}
}

// seedCronReports puts a cron report of supplier A and one of supplier B
// into the view the API reads (the cron report store on the binary's Redis
// and broker), when the binary serves the cron report routes at all.
func (w *tenancyWorld) seedCronReports() {
	routes := scrapeRoutes(w.t, w.p)
	if _, ok := routes["GET /operator/v2/cron/reports/{id}"]; !ok {
		return
	}
	m := regexp.MustCompile(`Redis\s+(redis://\S+)`).FindStringSubmatch(w.p.stdout.String())
	if m == nil {
		w.t.Fatalf("no Redis address in the banner:\n%s", w.p.stdout.String())
	}
	opt, err := redis.ParseURL(m[1])
	if err != nil {
		w.t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	pub := stream.NewProducer(stream.ProducerConfig{Brokers: []string{w.p.kafka}})
	defer pub.Close()
	store := cronreport.NewStore(cronreport.Options{Redis: rdb, Publisher: pub})
	base := time.Now().UnixNano() / 1000 // distinctive ids, not small integers found anywhere
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i, sup := range []string{w.supA, w.supB} {
		id := base + int64(i)
		now := time.Now().UTC().Truncate(time.Millisecond)
		rep := cronreport.Report{Summary: cronreport.Summary{ID: id, Inserted: now, ExternalSystemID: sup, ErrorCount: 1},
			ErrorReport: cronreport.NewErrorReport([]string{"product " + sup + "-x: boom"}), RunID: w.newID("run"),
			RequestKey: w.newID("req"), Began: now}
		if err := store.Put(ctx, rep); err != nil {
			w.t.Fatalf("seed cron report: %v", err)
		}
		if i == 0 {
			w.cronA = id
			w.mark(gOpA, strconv.FormatInt(id, 10))
		}
	}
	w.eventually(w.opA, "GET", "/operator/v2/cron/reports/"+strconv.FormatInt(w.cronA, 10), "", 200, nil)
}

// scrapeRoutes reads the routes the binary registered, with their request
// counts, from its route metrics: every registered route has its latency
// series from registration on (query/httpapi resolves it in Handle), so the
// scrape is the server's own route table. Keys are "METHOD pattern".
func scrapeRoutes(t *testing.T, p *proc) map[string]int {
	t.Helper()
	raw := p.metrics(t)
	re := regexp.MustCompile(`(?m)^switchback_query_request_seconds_count\{method="([A-Z]+)",route="([^"]+)"\} (\d+)$`)
	out := map[string]int{}
	for _, m := range re.FindAllStringSubmatch(string(raw), -1) {
		if m[2] == "unmatched" {
			continue
		}
		n, _ := strconv.Atoi(m[3])
		out[m[1]+" "+m[2]] = n
	}
	if len(out) == 0 {
		t.Fatalf("no route series in the scrape:\n%.2000s", raw)
	}
	return out
}

// matrixCall is one call of a row.
type matrixCall struct {
	who   *matrixActor
	path  string
	body  string
	want  int
	check func(matrixReply) error // more than the status, optional
}

// matrixRow is one route of the matrix.
type matrixRow struct {
	method, route string
	allowed       []string     // roles the route admits
	owner         matrixCall   // tenant A: the positive control
	others        []matrixCall // tenant B (and A's other principals where scope is per principal)
	// shared: the answer lists every sales channel, which operators may
	// all see (spec doc 2, GET /channels); the channel's identity is no
	// leak to an operator there.
	shared bool
	// needsCH: the route reads history; without ClickHouse only the role
	// refusals are checked.
	needsCH bool
	// optional: a row for a route the binary may not serve yet (cron
	// reports); skipped when it is not registered.
	optional bool
	// octo: an OCTO route (query/octo): every refusal is OCTO's 400 with
	// its error name (octoNames), not our status and code.
	octo bool
	// public: the API reference (query/apidocs), served without
	// credentials: every principal of every role, a mixed credential and
	// no credential at all get the owner's answer, which holds nobody's
	// data.
	public     bool
	registered bool
}

func (r matrixRow) key() string { return r.method + " " + r.route }

// statsFailed checks a delivery stats answer: its totals count n failed
// deliveries.
func statsFailed(n int) func(matrixReply) error {
	return func(r matrixReply) error {
		var b struct {
			Totals struct {
				Failed *int `json:"failed"`
			} `json:"totals"`
		}
		if err := json.Unmarshal(r.raw, &b); err != nil || b.Totals.Failed == nil {
			return fmt.Errorf("not a stats answer: %v", err)
		}
		if *b.Totals.Failed != n {
			return fmt.Errorf("totals count %d failed deliveries, want %d", *b.Totals.Failed, n)
		}
		return nil
	}
}

func answerHas(want string) func(matrixReply) error {
	return func(r matrixReply) error {
		if !strings.Contains(string(r.raw), want) {
			return fmt.Errorf("answer lacks %q", want)
		}
		return nil
	}
}

var matrixRoles = []string{"admin", "operator", "reseller"}

// coverage fails for a registered route without a row and for a row of a
// route the binary does not serve (unless optional).
func (w *tenancyWorld) coverage(t *testing.T, registered map[string]int, rows []matrixRow) {
	t.Helper()
	have := map[string]bool{}
	for i := range rows {
		k := rows[i].key()
		if have[k] {
			t.Errorf("two matrix rows for %s", k)
		}
		have[k] = true
		_, rows[i].registered = registered[k]
		if !rows[i].registered && !rows[i].optional {
			t.Errorf("matrix row %s: the binary does not register this route", k)
		}
		if !rows[i].registered && rows[i].optional {
			t.Logf("route %s not registered by this binary: its row is skipped", k)
		}
	}
	var missing []string
	for k := range registered {
		if !have[k] {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	for _, k := range missing {
		t.Errorf("route %s has no row in the tenancy matrix (e2e_tenancy_test.go): add the owner's call, the other tenant's and the refused roles", k)
	}
	t.Logf("tenancy matrix: %d registered routes, %d rows", len(registered), len(rows))
}

// run calls one row: the refused roles, a mixed credential, the others,
// then the owner, and returns how many requests it sent.
func (w *tenancyWorld) run(t *testing.T, r matrixRow) int {
	if r.public {
		return w.runPublic(t, r)
	}
	var cases []matrixCall
	allowed := map[string]bool{}
	for _, ro := range r.allowed {
		allowed[ro] = true
	}
	for _, ro := range matrixRoles {
		if allowed[ro] {
			continue
		}
		for _, a := range w.ofRole(ro) {
			cases = append(cases, matrixCall{who: a, path: r.owner.path, body: r.owner.body, want: 403})
		}
	}
	runOwner, runOthers := true, true
	if r.needsCH && !w.ch {
		runOwner, runOthers = false, false
	}
	n := 0
	for _, c := range cases {
		w.expect(t, r, c, c.who.key, c.who.secret)
		n++
		w.tally["role without the route: 403"]++
	}
	// A's key with another principal's secret: 401, whatever the route.
	mixed := &matrixActor{label: r.owner.who.label + "'s key with reseller B's secret"}
	w.expect(t, r, matrixCall{who: mixed, path: r.owner.path, body: r.owner.body, want: 401}, r.owner.who.key, w.resB.secret)
	n++
	w.tally["A's key, another's secret: 401"]++
	if runOthers {
		for _, c := range r.others {
			got := w.expect(t, r, c, c.who.key, c.who.secret)
			n++
			w.tally[fmt.Sprintf("other tenant: %d", c.want)]++
			if c.want == 403 || c.want == 404 {
				w.sameAsUnknown(t, r, c, got)
				n++
				w.tally["the same call on unknown ids: the same answer"]++
			}
		}
	}
	if runOwner {
		w.expect(t, r, r.owner, r.owner.who.key, r.owner.who.secret)
		n++
		w.tally["owner: 2xx"]++
	}
	return n
}

// runPublic calls a public row as everyone: the same answer for all, and
// no tenant's data in it.
func (w *tenancyWorld) runPublic(t *testing.T, r matrixRow) int {
	n := 0
	for _, ro := range matrixRoles {
		for _, a := range w.ofRole(ro) {
			w.expect(t, r, matrixCall{who: a, path: r.owner.path, want: r.owner.want, check: r.owner.check}, a.key, a.secret)
			n++
		}
	}
	mixed := &matrixActor{label: "reseller A's key with reseller B's secret"}
	w.expect(t, r, matrixCall{who: mixed, path: r.owner.path, want: r.owner.want, check: r.owner.check}, w.resA.key, w.resB.secret)
	anyone := &matrixActor{label: "no credentials"}
	w.expect(t, r, matrixCall{who: anyone, path: r.owner.path, want: r.owner.want, check: r.owner.check}, "", "")
	w.tally["public: the same answer for everyone"] += n + 2
	return n + 2
}

// ofRole is the principals of a role that stand in for "a role without
// the route": tenant A's and tenant B's.
func (w *tenancyWorld) ofRole(role string) []*matrixActor {
	switch role {
	case "admin":
		return []*matrixActor{w.admin}
	case "operator":
		return []*matrixActor{w.opA, w.opB}
	default:
		return []*matrixActor{w.resA, w.resB}
	}
}

// octoMatrixNames are the OCTO error names of an OCTO row's refusals, by
// the status the row states in our terms: a principal of another role or a
// wrong secret is FORBIDDEN, what does not exist for the caller FORBIDDEN
// (a supplier not on its channel) or INVALID_BOOKING_UUID, a conflict
// UNPROCESSABLE_ENTITY.
var octoMatrixNames = map[int][]string{
	401: {"FORBIDDEN"},
	403: {"FORBIDDEN"},
	404: {"FORBIDDEN", "INVALID_BOOKING_UUID"},
	409: {"UNPROCESSABLE_ENTITY"},
}

var matrixErrorCodes = map[int][]string{
	400: {"INVALID_FIELD", "BAD_REQUEST"},
	401: {"UNAUTHORIZED"},
	403: {"FORBIDDEN"},
	404: {"NOT_FOUND"},
	409: {"CONFLICT"},
}

// sameAsUnknown sends c again with every id of A's in it replaced by an
// id nobody has, and wants the same status and error object (the ids
// mapped back): the refusal must not tell an id of A's from no id at all.
func (w *tenancyWorld) sameAsUnknown(t *testing.T, r matrixRow, c matrixCall, got matrixReply) {
	t.Helper()
	path, body := c.path, c.body
	back := map[string]string{}
	for m := range w.marks {
		if !strings.Contains(path, m) && !strings.Contains(body, m) {
			continue
		}
		u := w.unknownLike(m)
		back[u] = m
		path, body = strings.ReplaceAll(path, m, u), strings.ReplaceAll(body, m, u)
	}
	if len(back) == 0 {
		t.Errorf("%s %s as %s: no id of A's in the request, so the refusal proves nothing", r.method, c.path, c.who.label)
		return
	}
	twin := w.call(t, c.who, c.who.key, c.who.secret, r.method, path, body)
	mapBack := func(v any) string {
		s := fmt.Sprint(v)
		for u, m := range back {
			s = strings.ReplaceAll(s, u, m)
		}
		return s
	}
	a, b := got.obj(), twin.obj()
	for _, f := range []string{"code", "message", "data", "error", "errorMessage", "uuid"} {
		if fmt.Sprint(a[f]) != mapBack(b[f]) {
			t.Errorf("%s %s as %s tells A's ids from unknown ones: %s %v, on unknown ids %d %v", r.method, c.path, c.who.label, f, a[f], twin.status, b[f])
		}
	}
	if got.status != twin.status {
		t.Errorf("%s %s as %s: %d on A's ids, %d on unknown ones: %s", r.method, c.path, c.who.label, got.status, twin.status, twin.raw)
	}
}

// expect sends c and checks its status, its error object and what it
// must not contain.
func (w *tenancyWorld) expect(t *testing.T, r matrixRow, c matrixCall, key, secret string) matrixReply {
	t.Helper()
	got := w.call(t, c.who, key, secret, r.method, c.path, c.body)
	what := fmt.Sprintf("%s %s as %s", r.method, c.path, c.who.label)
	if names, ok := octoMatrixNames[c.want]; ok && r.octo {
		// OCTO answers every error 400 with its name (docs/decisions.md,
		// "Selling through OCTO").
		if name, _ := got.obj()["error"].(string); got.status != 400 || !slices.Contains(names, name) {
			t.Errorf("%s: %d %s, want OCTO's 400 with one of %v (for our %d)", what, got.status, got.raw, names, c.want)
		}
	} else if got.status != c.want {
		t.Errorf("%s: %d %s, want %d", what, got.status, got.raw, c.want)
	}
	if codes, ok := matrixErrorCodes[got.status]; ok && !r.octo {
		code, _ := got.obj()["code"].(string)
		if !slices.Contains(codes, code) {
			t.Errorf("%s: %d with code %q, want the error object with one of %v: %s", what, got.status, code, codes, got.raw)
		}
	}
	if c.check != nil {
		if err := c.check(got); err != nil {
			t.Errorf("%s: %v: %s", what, err, got.raw)
		}
	}
	body := string(got.raw)
	for _, s := range w.secrets {
		if strings.Contains(body, s) {
			t.Errorf("%s: the answer carries a principal secret or partner credential", what)
		}
	}
	if c.who == r.owner.who && key == c.who.key && secret == c.who.secret {
		return got // the owner sees its own data
	}
	sent := c.path + "\n" + c.body
	for m, g := range w.marks {
		if slices.Contains(c.who.sees, g) || strings.Contains(sent, m) {
			continue
		}
		if r.shared && g == gChanID && c.who.role == "operator" {
			continue
		}
		if strings.Contains(body, m) {
			t.Errorf("%s: the answer leaks %s's %q: %s", what, g, m, body)
		}
	}
	return got
}

var (
	matrixOperatorRoles = []string{"operator", "admin"}
	matrixResellerRole  = []string{"reseller"}
	matrixAdminRole     = []string{"admin"}
)

// rows is the matrix: one row per registered route.
func (w *tenancyWorld) rows() []matrixRow {
	pw := w.pwned
	supA, prodA, rateA := w.supA, w.prodA, w.rateA
	chSup := "/channel/v1.2/suppliers/" + supA
	chProd := chSup + "/products/" + prodA
	chRate := chProd + "/rates/" + rateA
	opProd := "/operator/v2/suppliers/" + supA + "/products/" + prodA
	const (
		cSup  = "/channel/v1.2/suppliers/{supplier_id}"
		cProd = cSup + "/products/{product_id}"
		cRate = cProd + "/rates/{rate_id}"
		cBind = cProd + "/channels/{channel_id}"
		oBind = "/operator/v2/suppliers/{supplierId}/products/{productId}/bindings"
	)
	bind := fmt.Sprintf(`{"priceAt":"PRICE_AT_SALE","rateIds":[%q]}`, rateA)
	newSupplier := func() string {
		return catalogtest.SupplierBody(w.newID("sup-a-new"), "New "+w.newID("n"), "NEW", "k", "s")
	}
	pwnedSupplier := catalogtest.SupplierBody(supA, pw, "PWN", "k", "s")
	pwnedProduct := catalogtest.ProductBody(prodA, pw, pw)
	pwnedRate := catalogtest.RateBody(rateA, pw)
	// Within the window of dates the API accepts (internal/bounds), so
	// that B's refusal is for scope, not for the dates.
	soon := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 30)
	pwnedAvail := fmt.Sprintf(`{"availabilities":[{"id":%q,"start":%q,"end":%q,"capacity":1}]}`, pw,
		soon.Add(9*time.Hour).Format(time.RFC3339), soon.Add(11*time.Hour).Format(time.RFC3339))
	pwnedSched := fmt.Sprintf(`{"entries":[{"from":%q,"until":%q,"prices":[{"id":%q,"retail":{"amount":1,"currency":"EUR"}}]}]}`,
		soon.Format(time.DateOnly), soon.AddDate(0, 0, 1).Format(time.DateOnly), pw)
	opA, opB := w.opA, w.opB
	of := func(who *matrixActor, path, body string, want int, check func(matrixReply) error) matrixCall {
		return matrixCall{who: who, path: path, body: body, want: want, check: check}
	}

	rs := []matrixRow{
		// ---- admin API: the admin only.
		{method: "POST", route: "/admin/v1/principals", allowed: matrixAdminRole,
			owner: of(w.admin, "/admin/v1/principals", `{"role":"operator","name":"Matrix extra"}`, 201, nil)},
		{method: "GET", route: "/admin/v1/principals", allowed: matrixAdminRole,
			owner: of(w.admin, "/admin/v1/principals", "", 200, answerHas(w.opA.id))},
		{method: "DELETE", route: "/admin/v1/principals/{id}", allowed: matrixAdminRole,
			owner: of(w.admin, "/admin/v1/principals/"+w.victim(), "", 204, nil)},
		{method: "POST", route: "/admin/v1/channels", allowed: matrixAdminRole,
			owner: of(w.admin, "/admin/v1/channels", `{"name":"Matrix channel","companyName":"Matrix Co"}`, 201, nil)},
		{method: "GET", route: "/admin/v1/channels", allowed: matrixAdminRole,
			owner: of(w.admin, "/admin/v1/channels", "", 200, answerHas(w.chA))},
		{method: "GET", route: "/admin/v1/channels/{id}", allowed: matrixAdminRole,
			owner: of(w.admin, "/admin/v1/channels/"+w.chA, "", 200, answerHas(w.chA))},
		{method: "PUT", route: "/admin/v1/channels/{id}", allowed: matrixAdminRole,
			owner: of(w.admin, "/admin/v1/channels/"+w.chX, `{"name":"Renamed","companyName":"Co"}`, 200, nil)},

		// ---- channel v1.2: operators (and admins); another operator's
		// supplier is 404 (docs/decisions.md "Scope").
		{method: "GET", route: "/channel/v1.2/channels", allowed: matrixOperatorRoles, shared: true,
			owner:  of(opA, "/channel/v1.2/channels", "", 200, answerHas(w.chA)),
			others: []matrixCall{of(opB, "/channel/v1.2/channels", "", 200, nil)}},
		{method: "GET", route: "/channel/v1.2/channels/{channel_id}", allowed: matrixOperatorRoles, shared: true,
			owner:  of(opA, "/channel/v1.2/channels/"+w.chA, "", 200, answerHas(w.chA)),
			others: []matrixCall{of(opB, "/channel/v1.2/channels/"+w.chA, "", 200, nil)}},
		{method: "GET", route: cProd + "/channels", allowed: matrixOperatorRoles,
			owner:  of(opA, chProd+"/channels", "", 200, answerHas(w.chA)),
			others: []matrixCall{of(opB, chProd+"/channels", "", 404, nil)}},
		{method: "GET", route: cBind, allowed: matrixOperatorRoles,
			owner:  of(opA, chProd+"/channels/"+w.chA, "", 200, answerHas(rateA)),
			others: []matrixCall{of(opB, chProd+"/channels/"+w.chA, "", 404, nil)}},
		{method: "POST", route: cBind, allowed: matrixOperatorRoles,
			owner: of(opA, chProd+"/channels/"+w.chX, bind, 201, nil),
			// B binding A's product to B's reseller's channel.
			others: []matrixCall{of(opB, chProd+"/channels/"+w.chB, bind, 404, nil)}},
		{method: "PUT", route: cBind, allowed: matrixOperatorRoles,
			owner:  of(opA, chProd+"/channels/"+w.chA, bind, 200, nil),
			others: []matrixCall{of(opB, chProd+"/channels/"+w.chA, `{"priceAt":"PRICE_AT_REDEMPTION","rateIds":[]}`, 404, nil)}},
		{method: "DELETE", route: cBind, allowed: matrixOperatorRoles,
			owner:  of(opA, chProd+"/channels/"+w.chS1, "", 204, nil),
			others: []matrixCall{of(opB, chProd+"/channels/"+w.chA, "", 404, nil)}},
		// A taken supplier id is 409 (docs/decisions.md: it reveals only
		// that the id is taken); the answer carries nothing of A's.
		{method: "POST", route: "/channel/v1.2/supplier", allowed: matrixOperatorRoles,
			owner:  of(opA, "/channel/v1.2/supplier", newSupplier(), 201, nil),
			others: []matrixCall{of(opB, "/channel/v1.2/supplier", pwnedSupplier, 409, nil)}},
		{method: "POST", route: "/channel/v1.2/suppliers", allowed: matrixOperatorRoles,
			owner:  of(opA, "/channel/v1.2/suppliers", newSupplier(), 201, nil),
			others: []matrixCall{of(opB, "/channel/v1.2/suppliers", pwnedSupplier, 409, nil)}},
		{method: "GET", route: "/channel/v1.2/suppliers", allowed: matrixOperatorRoles,
			owner:  of(opA, "/channel/v1.2/suppliers", "", 200, answerHas(supA)),
			others: []matrixCall{of(opB, "/channel/v1.2/suppliers", "", 200, answerHas(w.supB))}},
		{method: "GET", route: cSup, allowed: matrixOperatorRoles,
			owner:  of(opA, chSup, "", 200, answerHas(supA)),
			others: []matrixCall{of(opB, chSup, "", 404, nil)}},
		{method: "PUT", route: cSup, allowed: matrixOperatorRoles,
			owner:  of(opA, chSup, w.supABody, 200, nil),
			others: []matrixCall{of(opB, chSup, pwnedSupplier, 404, nil)}},
		// A's supplier has products: its owner would get 409; B must get
		// 404 (scope first), or the status would tell B it exists.
		{method: "DELETE", route: cSup, allowed: matrixOperatorRoles,
			owner:  of(opA, "/channel/v1.2/suppliers/"+w.supADel, "", 204, nil),
			others: []matrixCall{of(opB, chSup, "", 404, nil)}},
		{method: "POST", route: cSup + "/products", allowed: matrixOperatorRoles,
			owner:  of(opA, chSup+"/products", catalogtest.ProductBody(w.newID("prod-a-new"), "New", "New"), 201, nil),
			others: []matrixCall{of(opB, chSup+"/products", catalogtest.ProductBody(w.newID("prod-pwn"), pw, pw), 404, nil)}},
		{method: "POST", route: "/channel/v1.2/bulk/suppliers/{supplier_id}/products", allowed: matrixOperatorRoles,
			owner:  of(opA, "/channel/v1.2/bulk/suppliers/"+supA+"/products", `{"products":[`+catalogtest.ProductBody(w.newID("prod-a-bulk"), "Bulk", "Bulk")+`]}`, 200, nil),
			others: []matrixCall{of(opB, "/channel/v1.2/bulk/suppliers/"+supA+"/products", `{"products":[`+pwnedProduct+`]}`, 404, nil)}},
		{method: "GET", route: cSup + "/products", allowed: matrixOperatorRoles,
			owner:  of(opA, chSup+"/products", "", 200, answerHas(prodA)),
			others: []matrixCall{of(opB, chSup+"/products", "", 404, nil)}},
		{method: "GET", route: cProd, allowed: matrixOperatorRoles,
			owner:  of(opA, chProd, "", 200, answerHas(prodA)),
			others: []matrixCall{of(opB, chProd, "", 404, nil)}},
		{method: "PUT", route: cProd, allowed: matrixOperatorRoles,
			owner:  of(opA, chProd, w.prodABody, 200, nil),
			others: []matrixCall{of(opB, chProd, pwnedProduct, 404, nil)}},
		{method: "DELETE", route: cProd, allowed: matrixOperatorRoles,
			owner:  of(opA, chSup+"/products/"+w.prodADel, "", 204, nil),
			others: []matrixCall{of(opB, chProd, "", 404, nil)}},
		{method: "POST", route: cProd + "/rates", allowed: matrixOperatorRoles,
			owner:  of(opA, chProd+"/rates", catalogtest.RateBody(w.newID("rate-a-new"), "New"), 201, nil),
			others: []matrixCall{of(opB, chProd+"/rates", catalogtest.RateBody(w.newID("rate-pwn"), pw), 404, nil)}},
		{method: "POST", route: "/channel/v1.2/bulk/suppliers/{supplier_id}/products/{product_id}/rates", allowed: matrixOperatorRoles,
			owner:  of(opA, "/channel/v1.2/bulk"+strings.TrimPrefix(chProd, "/channel/v1.2")+"/rates", `{"rates":[`+catalogtest.RateBody(w.newID("rate-a-bulk"), "Bulk")+`]}`, 200, nil),
			others: []matrixCall{of(opB, "/channel/v1.2/bulk"+strings.TrimPrefix(chProd, "/channel/v1.2")+"/rates", `{"rates":[`+pwnedRate+`]}`, 404, nil)}},
		{method: "GET", route: cProd + "/rates", allowed: matrixOperatorRoles,
			owner:  of(opA, chProd+"/rates", "", 200, answerHas(rateA)),
			others: []matrixCall{of(opB, chProd+"/rates", "", 404, nil)}},
		{method: "GET", route: cRate, allowed: matrixOperatorRoles,
			owner:  of(opA, chRate, "", 200, answerHas(rateA)),
			others: []matrixCall{of(opB, chRate, "", 404, nil)}},
		{method: "PUT", route: cRate, allowed: matrixOperatorRoles,
			owner:  of(opA, chRate, w.rateABody, 200, nil),
			others: []matrixCall{of(opB, chRate, pwnedRate, 404, nil)}},
		{method: "DELETE", route: cRate, allowed: matrixOperatorRoles,
			owner:  of(opA, chProd+"/rates/"+w.rateADel, "", 204, nil),
			others: []matrixCall{of(opB, chRate, "", 404, nil)}},
		{method: "PUT", route: cRate + "/availabilities", allowed: matrixOperatorRoles,
			owner:  of(opA, chRate+"/availabilities", w.availABody, 200, nil),
			others: []matrixCall{of(opB, chRate+"/availabilities", pwnedAvail, 404, nil)}},
		{method: "GET", route: cRate + "/availabilities", allowed: matrixOperatorRoles,
			owner:  of(opA, chRate+"/availabilities", "", 200, answerHas(rateA)),
			others: []matrixCall{of(opB, chRate+"/availabilities", "", 404, nil)}},
		{method: "PUT", route: cRate + "/priceschedule", allowed: matrixOperatorRoles,
			owner:  of(opA, chRate+"/priceschedule", w.schedABody, 200, nil),
			others: []matrixCall{of(opB, chRate+"/priceschedule", pwnedSched, 404, nil)}},
		{method: "GET", route: cRate + "/priceschedule", allowed: matrixOperatorRoles,
			owner:  of(opA, chRate+"/priceschedule", "", 200, answerHas(rateA)),
			others: []matrixCall{of(opB, chRate+"/priceschedule", "", 404, nil)}},

		// ---- operator v2.
		{method: "GET", route: "/operator/v2/channels", allowed: matrixOperatorRoles, shared: true,
			owner:  of(opA, "/operator/v2/channels", "", 200, answerHas(w.chA)),
			others: []matrixCall{of(opB, "/operator/v2/channels", "", 200, nil)}},
		{method: "GET", route: oBind, allowed: matrixOperatorRoles,
			owner:  of(opA, opProd+"/bindings", "", 200, answerHas(w.chA)),
			others: []matrixCall{of(opB, opProd+"/bindings", "", 404, nil)}},
		{method: "GET", route: oBind + "/{channelId}", allowed: matrixOperatorRoles,
			owner:  of(opA, opProd+"/bindings/"+w.chA, "", 200, answerHas(rateA)),
			others: []matrixCall{of(opB, opProd+"/bindings/"+w.chA, "", 404, nil)}},
		{method: "PUT", route: oBind + "/{channelId}", allowed: matrixOperatorRoles,
			owner:  of(opA, opProd+"/bindings/"+w.chA, fmt.Sprintf(`{"optionIds":[%q]}`, rateA), 200, nil),
			others: []matrixCall{of(opB, opProd+"/bindings/"+w.chB, fmt.Sprintf(`{"optionIds":[%q]}`, rateA), 404, nil)}},
		{method: "DELETE", route: oBind + "/{channelId}", allowed: matrixOperatorRoles,
			owner:  of(opA, opProd+"/bindings/"+w.chS2, "", 204, nil),
			others: []matrixCall{of(opB, opProd+"/bindings/"+w.chA, "", 404, nil)}},
		{method: "POST", route: "/operator/v2/notifications", allowed: matrixOperatorRoles,
			owner:  of(opA, "/operator/v2/notifications?supplierId="+supA+"&productId="+prodA, "", 201, nil),
			others: []matrixCall{of(opB, "/operator/v2/notifications?supplierId="+supA+"&productId="+prodA, "", 400, nil)}},
		{method: "POST", route: "/operator/v2/notifications/price-schedule", allowed: matrixOperatorRoles,
			owner:  of(opA, "/operator/v2/notifications/price-schedule?supplierId="+supA+"&productId="+prodA, "", 201, nil),
			others: []matrixCall{of(opB, "/operator/v2/notifications/price-schedule?supplierId="+supA+"&productId="+prodA, "", 400, nil)}},
		// B filtering on A's supplier sees its own (none).
		{method: "GET", route: "/operator/v2/notifications", allowed: matrixOperatorRoles,
			owner: of(opA, "/operator/v2/notifications", "", 200, answerHas(w.crA)),
			others: []matrixCall{of(opB, "/operator/v2/notifications?supplierId="+supA, "", 200, nil),
				of(opB, "/operator/v2/notifications?requestId="+w.crA, "", 200, nil)}},
		{method: "GET", route: "/operator/v2/notifications/{requestId}", allowed: matrixOperatorRoles,
			owner:  of(opA, "/operator/v2/notifications/"+w.crA, "", 200, answerHas(w.crA)),
			others: []matrixCall{of(opB, "/operator/v2/notifications/"+w.crA, "", 404, nil)}},
		// Operators only (not admins: query/historyapi); another operator's
		// supplier is 403 whether it exists or not (docs/decisions.md).
		{method: "GET", route: "/operator/v2/history/availability", allowed: []string{"operator"}, needsCH: true,
			owner:  of(opA, "/operator/v2/history/availability?supplierId="+supA, "", 200, nil),
			others: []matrixCall{of(opB, "/operator/v2/history/availability?supplierId="+supA, "", 403, nil)}},
		// The console's history reads (issue 25): a supplier's calls as the
		// availability history; a reseller's aggregates and automatic
		// disables its own (A's failed delivery counts for A only).
		{method: "GET", route: "/operator/v2/history/connections", allowed: []string{"operator"}, needsCH: true,
			owner:  of(opA, "/operator/v2/history/connections?supplierId="+supA, "", 200, answerHas(`"supplierId":"`+supA+`"`)),
			others: []matrixCall{of(opB, "/operator/v2/history/connections?supplierId="+supA, "", 403, nil)}},
		{method: "GET", route: "/registry/v1.1/deliveries/stats", allowed: matrixResellerRole, needsCH: true,
			owner: of(w.resA, "/registry/v1.1/deliveries/stats?type=product&from="+w.from, "", 200, statsFailed(1)),
			others: []matrixCall{of(w.resB, "/registry/v1.1/deliveries/stats?type=product&from="+w.from, "", 200, statsFailed(0)),
				of(w.resA2, "/registry/v1.1/deliveries/stats?type=product&from="+w.from, "", 200, statsFailed(0))}},
		{method: "GET", route: "/registry/v1.1/deliveries/auto-disables", allowed: matrixResellerRole, needsCH: true,
			owner:  of(w.resA, "/registry/v1.1/deliveries/auto-disables", "", 200, answerHas(`"items":[`)),
			others: []matrixCall{of(w.resB, "/registry/v1.1/deliveries/auto-disables", "", 200, nil)}},
		// The console's page and files: public, nobody's data.
		{method: "GET", route: "/console", public: true, owner: of(&matrixActor{label: "anyone"}, "/console", "", 200, answerHas("/console/assets/js/app.js"))},
		{method: "GET", route: "/console/{path:*}", public: true, owner: of(&matrixActor{label: "anyone"}, "/console/assets/js/api.js", "", 200, answerHas("X-API-Secret"))},
		{method: "GET", route: "/operator/v2/cron/reports", allowed: matrixOperatorRoles, optional: true,
			owner:  of(opA, "/operator/v2/cron/reports", "", 200, answerHas(strconv.FormatInt(w.cronA, 10))),
			others: []matrixCall{of(opB, "/operator/v2/cron/reports?externalSystemID="+supA, "", 200, nil)}},
		{method: "GET", route: "/operator/v2/cron/reports/{id}", allowed: matrixOperatorRoles, optional: true,
			owner:  of(opA, "/operator/v2/cron/reports/"+strconv.FormatInt(w.cronA, 10), "", 200, answerHas(supA)),
			others: []matrixCall{of(opB, "/operator/v2/cron/reports/"+strconv.FormatInt(w.cronA, 10), "", 404, nil)}},
	}

	// ---- reseller catalog reads (v1.2, v1.3): what B's channel is not
	// bound to is 404; lists are B's own, even filtered on A's code.
	start := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1).Format(time.RFC3339)
	end := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 4).Format(time.RFC3339)
	for _, v := range []string{"/v1.2", "/v1.3"} {
		sup := v + "/suppliers/" + supA
		prod := sup + "/products/" + prodA
		rp := v + "/suppliers/{supplier_id}"
		pp := rp + "/products/{product_id}"
		rs = append(rs,
			matrixRow{method: "GET", route: v + "/suppliers", allowed: matrixResellerRole,
				owner: of(w.resA, v+"/suppliers", "", 200, answerHas(supA)),
				others: []matrixCall{of(w.resB, v+"/suppliers", "", 200, answerHas(w.supB)),
					of(w.resB, v+"/suppliers?code="+w.codeA, "", 200, nil),
					of(w.resB, v+"/suppliers?partner_id=p-"+w.codeA, "", 200, nil)}},
			matrixRow{method: "GET", route: rp, allowed: matrixResellerRole,
				owner:  of(w.resA, sup, "", 200, answerHas(supA)),
				others: []matrixCall{of(w.resB, sup, "", 404, nil)}},
			matrixRow{method: "GET", route: pp + "/rates/{rate_id}/priceschedule", allowed: matrixResellerRole,
				owner:  of(w.resA, prod+"/rates/"+rateA+"/priceschedule", "", 200, answerHas(rateA)),
				others: []matrixCall{of(w.resB, prod+"/rates/"+rateA+"/priceschedule", "", 404, nil)}},
			matrixRow{method: "GET", route: pp + "/availabilities", allowed: matrixResellerRole,
				owner:  of(w.resA, prod+"/availabilities?start="+start+"&end="+end, "", 200, answerHas(rateA)),
				others: []matrixCall{of(w.resB, prod+"/availabilities?start="+start+"&end="+end, "", 404, nil)}},
			matrixRow{method: "GET", route: pp + "/availability", allowed: matrixResellerRole,
				owner:  of(w.resA, prod+"/availability?at="+w.at+"&qty=1", "", 200, nil),
				others: []matrixCall{of(w.resB, prod+"/availability?at="+w.at+"&qty=1", "", 404, nil)}},
			matrixRow{method: "GET", route: rp + "/products", allowed: matrixResellerRole,
				owner:  of(w.resA, sup+"/products", "", 200, answerHas(prodA)),
				others: []matrixCall{of(w.resB, sup+"/products", "", 404, nil)}},
			matrixRow{method: "GET", route: pp, allowed: matrixResellerRole,
				owner:  of(w.resA, prod, "", 200, answerHas(prodA)),
				others: []matrixCall{of(w.resB, prod, "", 404, nil)}},
			matrixRow{method: "GET", route: pp + "/rates", allowed: matrixResellerRole,
				owner:  of(w.resA, prod+"/rates", "", 200, answerHas(rateA)),
				others: []matrixCall{of(w.resB, prod+"/rates", "", 404, nil)}},
			matrixRow{method: "GET", route: pp + "/rates/{rate_id}", allowed: matrixResellerRole,
				owner:  of(w.resA, prod+"/rates/"+rateA, "", 200, answerHas(rateA)),
				others: []matrixCall{of(w.resB, prod+"/rates/"+rateA, "", 404, nil)}},
		)
	}
	// ---- holds and bookings (v1.2, v1.3: one service). The owner's
	// POSTs are retries of A's first hold and booking (201, the same
	// records); B's holds and bookings on A's items are the documented
	// 400 (rate not bound to B's channel); B reusing A's hold and booking
	// ids for its own is 201 (ids are per channel, issue 18: B learns
	// nothing, A's are untouched, checked after the matrix), the second
	// time a retry of B's own.
	bBody := func(id, hold string, sup, prod, rate string) string {
		return fmt.Sprintf(`{"booking":{"id":%q,"holdId":%q,"items":[{"supplierId":%q,"productId":%q,"rateId":%q,"quantity":1,"startTime":%q}]}}`,
			id, hold, sup, prod, rate, w.at)
	}
	hBody := func(id, sup, prod, rate string) string {
		return fmt.Sprintf(`{"hold":{"id":%q,"items":[{"supplierId":%q,"productId":%q,"rateId":%q,"quantity":1,"at":%q}]}}`, id, sup, prod, rate, w.at)
	}
	for i, v := range []string{"/v1.2", "/v1.3"} {
		release, cancel := w.hA[2+i], w.bA[2+i]
		rs = append(rs,
			matrixRow{method: "POST", route: v + "/holds", allowed: matrixResellerRole,
				owner: of(w.resA, v+"/holds", w.holdBodyA, 201, answerHas(w.hA[1])),
				others: []matrixCall{of(w.resB, v+"/holds", hBody(w.newID("hold-pwn"), supA, prodA, rateA), 400, nil),
					of(w.resB, v+"/holds", hBody(w.hA[0], w.supB, w.prodB, w.rateB), 201, answerHas(w.supB))}},
			matrixRow{method: "GET", route: v + "/holds/{hold_id}", allowed: matrixResellerRole,
				owner:  of(w.resA, v+"/holds/"+w.hA[1], "", 200, answerHas(w.hA[1])),
				others: []matrixCall{of(w.resB, v+"/holds/"+w.hA[1], "", 404, nil)}},
			matrixRow{method: "DELETE", route: v + "/holds/{hold_id}", allowed: matrixResellerRole,
				owner:  of(w.resA, v+"/holds/"+release, "", 204, nil),
				others: []matrixCall{of(w.resB, v+"/holds/"+release, "", 404, nil)}},
			matrixRow{method: "POST", route: v + "/bookings", allowed: matrixResellerRole,
				owner: of(w.resA, v+"/bookings", w.bookBodyA, 201, answerHas(w.bA[1])),
				others: []matrixCall{of(w.resB, v+"/bookings", bBody(w.newID("book-pwn"), w.hA[1], supA, prodA, rateA), 400, nil),
					// A's hold, already used by A's booking: the channel
					// check must come before "used by booking ...".
					of(w.resB, v+"/bookings", bBody(w.newID("book-pwn"), w.hA[1], w.supB, w.prodB, w.rateB), 400, nil),
					of(w.resB, v+"/bookings", bBody(w.bA[0], w.hB2, w.supB, w.prodB, w.rateB), 201, answerHas(w.supB))}},
			matrixRow{method: "GET", route: v + "/bookings/{booking_id}", allowed: matrixResellerRole,
				owner:  of(w.resA, v+"/bookings/"+w.bA[1], "", 200, answerHas(w.bA[1])),
				others: []matrixCall{of(w.resB, v+"/bookings/"+w.bA[1], "", 404, nil)}},
			matrixRow{method: "PUT", route: v + "/bookings/cancel/{booking_id}", allowed: matrixResellerRole,
				owner:  of(w.resA, v+"/bookings/cancel/"+cancel, "", 204, nil),
				others: []matrixCall{of(w.resB, v+"/bookings/cancel/"+cancel, "", 404, nil)}},
		)
	}

	// ---- OCTO (query/octo): one endpoint per supplier. B does not see
	// A's supplier (FORBIDDEN on every path of its endpoint) and, on its
	// own supplier's endpoint, A's reservations do not exist for it
	// (INVALID_BOOKING_UUID, as for unknown ones); the owner reads and
	// changes A's v1.2 holds as OCTO reservations. A partner's hold cannot
	// be extended (doc 2 has no such call): the owner's extend is OCTO's
	// UNPROCESSABLE_ENTITY, B's the refusal of scope.
	{
		oa, ob := "/octo/"+supA, "/octo/"+w.supB
		const o = "/octo/{supplierId}"
		day := func(n int) string { return time.Now().UTC().AddDate(0, 0, n).Format(time.DateOnly) }
		avail := fmt.Sprintf(`{"productId":%q,"optionId":%q,"localDateStart":%q,"localDateEnd":%q}`, prodA, rateA, day(1), day(3))
		none := func(r matrixReply) error {
			if strings.TrimSpace(string(r.raw)) != "[]" {
				return fmt.Errorf("want no booking")
			}
			return nil
		}
		confirm := `{"contact":{"firstName":"Ada"}}`
		octoRow := func(method, route, owner, body string, want int, check func(matrixReply) error, others ...matrixCall) matrixRow {
			return matrixRow{method: method, route: o + route, allowed: matrixResellerRole, octo: true,
				owner:  of(w.resA, oa+owner, body, want, check),
				others: append([]matrixCall{of(w.resB, oa+owner, body, 404, nil)}, others...)}
		}
		rs = append(rs,
			octoRow("GET", "/supplier", "/supplier", "", 200, answerHas(supA)),
			octoRow("GET", "/capabilities", "/capabilities", "", 200, nil),
			octoRow("GET", "/products", "/products", "", 200, answerHas(prodA)),
			octoRow("GET", "/products/{id}", "/products/"+prodA, "", 200, answerHas(prodA)),
			octoRow("POST", "/availability/calendar", "/availability/calendar", avail, 200, nil),
			octoRow("POST", "/availability", "/availability", avail, 200, answerHas("localDateTimeStart")),
			octoRow("POST", "/bookings", "/bookings", w.octoReserve, 200, answerHas("ON_HOLD")),
			octoRow("GET", "/bookings", "/bookings?resellerReference="+w.octoRef, "", 200, answerHas(w.oA[0]),
				of(w.resB, ob+"/bookings?resellerReference="+w.octoRef, "", 200, none)),
			octoRow("GET", "/bookings/{uuid}", "/bookings/"+w.oA[0], "", 200, answerHas(w.oA[0]),
				of(w.resB, ob+"/bookings/"+w.oA[0], "", 404, nil)),
			octoRow("PATCH", "/bookings/{uuid}", "/bookings/"+w.oA[0], `{"notes":"matrix"}`, 200, answerHas("matrix"),
				of(w.resB, ob+"/bookings/"+w.oA[0], `{"notes":"`+pw+`"}`, 404, nil)),
			octoRow("POST", "/bookings/{uuid}/extend", "/bookings/"+w.oA[0]+"/extend", `{"expirationMinutes":5}`, 409, nil,
				of(w.resB, ob+"/bookings/"+w.oA[0]+"/extend", `{"expirationMinutes":5}`, 404, nil)),
			octoRow("POST", "/bookings/{uuid}/confirm", "/bookings/"+w.oA[1]+"/confirm", confirm, 200, answerHas("CONFIRMED"),
				of(w.resB, ob+"/bookings/"+w.oA[1]+"/confirm", confirm, 404, nil)),
			octoRow("POST", "/bookings/{uuid}/cancel", "/bookings/"+w.oA[2]+"/cancel", "", 200, answerHas("CANCELLED"),
				of(w.resB, ob+"/bookings/"+w.oA[2]+"/cancel", "", 404, nil)),
		)
	}

	// ---- registry v1.1: the subscriber is the calling principal, so
	// scope is per principal: reseller A2 on A's own channel is as much a
	// stranger to A's rules as reseller B.
	for _, typ := range schemas.NotificationTypes() {
		crud := "/registry/v1.1" + crudPathOf(typ)
		ra, ra2 := w.ruleA[typ], w.ruleA2[typ]
		pwnedRule := fmt.Sprintf(`{"id":%q,"url":%q}`, ra, w.sink.url+"/"+pw)
		rs = append(rs,
			matrixRow{method: "GET", route: crud, allowed: matrixResellerRole,
				owner:  of(w.resA, crud, "", 200, answerHas(w.keyA[typ])),
				others: []matrixCall{of(w.resB, crud, "", 200, nil), of(w.resA2, crud, "", 200, nil)}},
			// B2 has no rule of the type: it may take A's rule id for its
			// own (ids are per subscriber); A's rule must not change. B,
			// which has one, gets its own 409.
			matrixRow{method: "POST", route: crud, allowed: matrixResellerRole,
				owner: of(w.resA3, crud, fmt.Sprintf(`{"url":%q}`, w.sink.url+w.pathA3+"/"+typ), 201, nil),
				others: []matrixCall{of(w.resB2, crud, fmt.Sprintf(`{"id":%q,"url":%q}`, ra, w.sink.url+w.pathB2+"/"+typ), 201, nil),
					of(w.resB, crud, pwnedRule, 409, nil)}},
			matrixRow{method: "PUT", route: crud, allowed: matrixResellerRole,
				owner:  of(w.resA, crud, fmt.Sprintf(`{"id":%q,"url":%q}`, ra, w.urlA[typ]), 200, answerHas(w.keyA[typ])),
				others: []matrixCall{of(w.resB, crud, pwnedRule, 404, nil), of(w.resA2, crud, pwnedRule, 404, nil)}},
			// Deletes consume A2's rules: the owner here is A2.
			matrixRow{method: "DELETE", route: crud + "/{id}", allowed: matrixResellerRole,
				owner:  of(w.resA2, crud+"/"+ra2, "", 200, nil),
				others: []matrixCall{of(w.resB, crud+"/"+ra2, "", 404, nil), of(w.resA, crud+"/"+ra2, "", 404, nil)}},
			matrixRow{method: "POST", route: "/registry/v1.1/" + typ + "/test/{id}", allowed: matrixResellerRole,
				owner: of(w.resA, "/registry/v1.1/"+typ+"/test/"+ra, matrixTestBodies[typ], 200, nil),
				others: []matrixCall{of(w.resB, "/registry/v1.1/"+typ+"/test/"+ra, matrixTestBodies[typ], 400, nil),
					of(w.resA2, "/registry/v1.1/"+typ+"/test/"+ra, matrixTestBodies[typ], 400, nil)}},
		)
	}
	replay := fmt.Sprintf(`{"type":"product","from":%q,"to":%q}`, w.from, w.to)
	replayedNone := func(r matrixReply) error {
		if !strings.Contains(string(r.raw), `"replayed":0`) {
			return fmt.Errorf("replayed another subscriber's notifications")
		}
		return nil
	}
	replayedSome := func(r matrixReply) error {
		if n, _ := r.obj()["replayed"].(float64); n < 1 {
			return fmt.Errorf("replayed %v, want A's failed delivery", r.obj()["replayed"])
		}
		return nil
	}
	rs = append(rs,
		matrixRow{method: "GET", route: "/registry/v1.1/metadata", allowed: matrixResellerRole,
			owner:  of(w.resA, "/registry/v1.1/metadata", "", 200, answerHas("137ms")),
			others: []matrixCall{of(w.resB, "/registry/v1.1/metadata", "", 200, nil), of(w.resA2, "/registry/v1.1/metadata", "", 200, nil)}},
		matrixRow{method: "PUT", route: "/registry/v1.1/metadata", allowed: matrixResellerRole,
			owner: of(w.resA, "/registry/v1.1/metadata", `{"throttleDelay":"137ms"}`, 200, nil),
			others: []matrixCall{of(w.resB, "/registry/v1.1/metadata", `{"throttleDelay":"0s","disableAll":false}`, 200, nil),
				of(w.resA2, "/registry/v1.1/metadata", `{"throttleDelay":"0s","disableAll":false}`, 200, nil)}},
		matrixRow{method: "GET", route: "/registry/v1.1/deliveries", allowed: matrixResellerRole, needsCH: true,
			owner: of(w.resA, "/registry/v1.1/deliveries?limit=1000", "", 200, answerHas(w.dlvFailed)),
			others: []matrixCall{of(w.resB, "/registry/v1.1/deliveries?limit=1000", "", 200, nil),
				of(w.resA2, "/registry/v1.1/deliveries?limit=1000", "", 200, nil)}},
		matrixRow{method: "POST", route: "/registry/v1.1/deliveries/replay", allowed: matrixResellerRole, needsCH: true,
			owner:  of(w.resA, "/registry/v1.1/deliveries/replay", replay, 202, replayedSome),
			others: []matrixCall{of(w.resB, "/registry/v1.1/deliveries/replay", replay, 202, replayedNone), of(w.resA2, "/registry/v1.1/deliveries/replay", replay, 202, replayedNone)}},
	)
	// ---- the API reference: public (no credentials), no tenant's data.
	anyone := &matrixActor{label: "anyone"}
	rs = append(rs,
		matrixRow{method: "GET", route: "/", public: true, owner: of(anyone, "/", "", 200, answerHas(`"/openapi/reseller.json"`))},
		matrixRow{method: "GET", route: "/docs", public: true, owner: of(anyone, "/docs", "", 200, answerHas("redoc.standalone.js"))},
		matrixRow{method: "GET", route: "/docs/{family}", public: true, owner: of(anyone, "/docs/operator", "", 200, answerHas("/openapi/operator.json"))},
		matrixRow{method: "GET", route: "/docs/assets/{file}", public: true, owner: of(anyone, "/docs/assets/docs.js", "", 200, answerHas("Redoc.init"))},
		matrixRow{method: "GET", route: "/openapi/{document}", public: true,
			owner: of(anyone, "/openapi/admin.json", "", 200, answerHas(`"openapi": "3.1.0"`))},
	)
	return rs
}

// victim is a principal the admin's revoke consumes.
func (w *tenancyWorld) victim() string {
	got := w.must(w.admin, "POST", "/admin/v1/principals", `{"role":"operator","name":"Victim"}`, 201)
	w.secrets = append(w.secrets, got["secret"].(string))
	w.revoked = &matrixActor{label: "the revoked operator", role: "operator", key: got["key"].(string), secret: got["secret"].(string)}
	return got["id"].(string)
}

// matrixTestBodies are valid test notification bodies of each type (spec doc 1,
// Registry endpoints).
var matrixTestBodies = map[string]string{
	schemas.TypeChannelBinding: `{"supplierID":"s","productID":"p","operation":"created"}`,
	schemas.TypeSupplier:       `{"supplierID":"s"}`,
	schemas.TypeProduct:        `{"supplierID":"s","productID":"p"}`,
	schemas.TypeRate:           `{"supplierID":"s","productID":"p","rateID":"r"}`,
	schemas.TypeAvailability:   `{"supplierID":"s","productID":"p","rateID":"r","start":"2030-01-01T10:00:00Z","end":"2030-01-01T12:00:00Z"}`,
	schemas.TypePriceSchedule:  `{"supplierID":"s","productID":"p","start":"2030-01-01T00:00:00Z","end":"2030-01-02T00:00:00Z"}`,
	schemas.TypeBooking:        `{"bookingID":"b","startTime":"2030-01-01T10:00:00Z"}`,
}

// integrity reads A's data back after the matrix: nothing the others sent
// changed it, and B's sink received nothing of A's.
func (w *tenancyWorld) integrity(t *testing.T) {
	t.Helper()
	chProd := "/channel/v1.2/suppliers/" + w.supA + "/products/" + w.prodA
	for _, c := range []struct {
		who  *matrixActor
		path string
		want []string
	}{
		{w.opA, "/channel/v1.2/suppliers/" + w.supA, []string{w.supA}},
		{w.opA, chProd, []string{w.prodA}},
		{w.opA, chProd + "/rates/" + w.rateA, []string{w.rateA}},
		{w.opA, chProd + "/channels/" + w.chA, []string{w.rateA}},
		{w.opA, chProd + "/rates/" + w.rateA + "/availabilities", nil},
		{w.opA, chProd + "/rates/" + w.rateA + "/priceschedule", nil},
		{w.opA, "/operator/v2/notifications/" + w.crA, []string{w.crA}},
		{w.admin, "/admin/v1/channels/" + w.chA, []string{w.chA}},
		{w.resA, "/v1.2/bookings/" + w.bA[1], []string{w.bA[1]}},
		{w.resA, "/registry/v1.1/metadata", []string{`"137ms"`, `"disableAll":false`}},
	} {
		r := w.do(t, c.who, "GET", c.path, "")
		if r.status != 200 {
			t.Errorf("after the matrix: GET %s as %s: %d %s", c.path, c.who.label, r.status, r.raw)
			continue
		}
		if strings.Contains(string(r.raw), w.pwned) {
			t.Errorf("after the matrix: GET %s carries another tenant's write: %s", c.path, r.raw)
		}
		for _, s := range c.want {
			if !strings.Contains(string(r.raw), s) {
				t.Errorf("after the matrix: GET %s lacks %s: %s", c.path, s, r.raw)
			}
		}
	}
	if r := w.do(t, w.resA, "GET", "/v1.2/bookings/"+w.bA[1], ""); strings.Contains(string(r.raw), schemas.BookingCancelled) {
		t.Errorf("A's booking was cancelled: %s", r.raw)
	}
	// Holds and bookings are the channel's, not the principal's
	// (query/bookingapi: "a reseller sees its own channel's holds and
	// bookings only"): A2, a second credential of channel A, reads them.
	if r := w.do(t, w.resA2, "GET", "/v1.2/bookings/"+w.bA[1], ""); r.status != 200 {
		t.Errorf("A2 (channel A) reading channel A's booking: %d %s, want 200 (bookings are per channel)", r.status, r.raw)
	}
	// The principal the admin revoked in the matrix is refused.
	if r := w.do(t, w.revoked, "GET", "/channel/v1.2/suppliers", ""); r.status != 401 {
		t.Errorf("revoked principal: %d %s, want 401", r.status, r.raw)
	}
	// A's cancellations reached A's booking rule (one per cancelled
	// booking), before B's sink is searched for them.
	deadline := time.Now().Add(30 * time.Second)
	for cancelled := map[any]bool{}; len(cancelled) < 2; {
		for _, got := range w.sink.on(w.pathA + "/" + schemas.TypeBooking) {
			if id := got.body["bookingID"]; got.body["operation"] == schemas.OperationCanceled && (id == w.bA[2] || id == w.bA[3]) {
				cancelled[id] = true
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("A's booking rule received %d of the 2 cancellations within 30s", len(cancelled))
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, typ := range schemas.NotificationTypes() {
		r := w.do(t, w.resA, "GET", "/registry/v1.1"+crudPathOf(typ), "")
		var rules []map[string]any
		_ = json.Unmarshal(r.raw, &rules)
		if len(rules) != 1 || rules[0]["id"] != w.ruleA[typ] || rules[0]["url"] != w.urlA[typ] || rules[0]["securityKey"] != w.keyA[typ] {
			t.Errorf("after the matrix: A's %s rule = %s, want id %s, url %s and its key unchanged", typ, r.raw, w.ruleA[typ], w.urlA[typ])
		}
	}
	// B's deliveries work (B's binding reached B's channelbinding rule)
	// and carry nothing of A's.
	w.sink.mu.Lock()
	defer w.sink.mu.Unlock()
	var toB int
	for _, got := range w.sink.got {
		if w.ownedByB(got.path) {
			toB++
			for m, g := range w.marks {
				if strings.Contains(string(got.raw), m) {
					t.Errorf("B's sink %s received %s's %q: %s", got.path, g, m, got.raw)
				}
			}
		}
	}
	if toB == 0 {
		t.Error("B's sink received nothing: the check that it received nothing of A's is vacuous")
	}
}

func (w *tenancyWorld) ownedByB(path string) bool {
	return strings.HasPrefix(path, w.pathB+"/") || strings.HasPrefix(path, w.pathB2+"/")
}

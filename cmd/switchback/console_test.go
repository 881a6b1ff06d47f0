package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
)

// consoleOutputDir is where the console's screenshots go: the test output
// folder (SWITCHBACK_TEST_OUTDIR, default bin/test-output), console/.
func consoleOutputDir() string {
	dir := os.Getenv("SWITCHBACK_TEST_OUTDIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "bin", "test-output")
	}
	return filepath.Join(dir, "console")
}

// consoleDocsShots are the screenshots committed in docs/console for the
// README, one per view; SWITCHBACK_UPDATE_SCREENSHOTS=1 rewrites them.
var consoleDocsShots = []string{
	"sign-in", "reseller-rules", "reseller-deliveries", "reseller-replay", "reseller-charts", "reseller-signature", "reseller-settings",
	"reseller-catalog", "operator-suppliers", "operator-bindings", "operator-notifications", "operator-cron", "phone-deliveries",
}

// pageLog is what the page did, from the browser's events.
type pageLog struct {
	mu         sync.Mutex
	requests   []string // every URL the page asked for
	exceptions []string
	errors     []string // console errors other than HTTP statuses
}

func (l *pageLog) listen(ev any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		l.requests = append(l.requests, ev.Request.URL)
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		l.exceptions = append(l.exceptions, msg)
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
			var parts []string
			for _, a := range ev.Args {
				parts = append(parts, string(a.Value)+a.Description)
			}
			l.errors = append(l.errors, "console."+string(ev.Type)+": "+strings.Join(parts, " "))
		}
	case *log.EventEntryAdded:
		// The API's refusals the test provokes (401, 403, 400, 500) show
		// as network entries; anything else at error level is a defect
		// (a CSP violation is a "security" entry).
		if ev.Entry.Level == log.EntryLevelError && ev.Entry.Source != log.EntrySourceNetwork {
			l.errors = append(l.errors, string(ev.Entry.Source)+": "+ev.Entry.Text)
		}
	}
}

// consoleBrowser is one headless Chromium tab on the console.
type consoleBrowser struct {
	t    *testing.T
	tab  context.Context
	base string
	log  *pageLog
	out  string
}

func newConsoleBrowser(t *testing.T, chrome, base string) *consoleBrowser {
	t.Helper()
	alloc, cancelAlloc := chromiumAllocator(context.Background(), t, chrome, 1280, 800, chromedp.Flag("hide-scrollbars", true))
	t.Cleanup(cancelAlloc)
	b := &consoleBrowser{t: t, base: base, log: &pageLog{}, out: consoleOutputDir()}
	tab, cancelTab := openTab(t, alloc, b.log.listen)
	t.Cleanup(cancelTab)
	b.tab = tab
	b.do("1280x800 viewport", chromedp.EmulateViewport(1280, 800))
	if err := os.MkdirAll(b.out, 0o755); err != nil {
		t.Fatal(err)
	}
	// A failure.png of an earlier run would pass for this one's.
	if err := os.Remove(filepath.Join(b.out, "failure.png")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return b
}

// do runs actions with a bound, failing the test with what.
func (b *consoleBrowser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.tab, 90*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail("%s: %v", what, err)
	}
}

// fail stops the test with the page's state: its text and a screenshot.
func (b *consoleBrowser) fail(format string, args ...any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.tab, 10*time.Second)
	defer cancel()
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`))
	if shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
		_ = os.WriteFile(filepath.Join(b.out, "failure.png"), shot, 0o644)
	}
	b.t.Fatalf(format+"\npage text:\n%s", append(args, tail(text, 3000))...)
}

// pageEval evaluates a JavaScript expression and returns its value.
func pageEval[T any](b *consoleBrowser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.tab, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.fail("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor polls the JavaScript predicate until it is truthy.
func (b *consoleBrowser) waitFor(what, predicate string, within time.Duration) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.tab, within+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](predicate, chromedp.WithPollingTimeout(within), chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		b.fail("waiting for %s (%s): %v", what, predicate, err)
	}
}

// until clicks sel (a refresh button) every second until the predicate
// holds: for what arrives through the history (ClickHouse, batched).
func (b *consoleBrowser) until(what, refresh, predicate string, within time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(within)
	for !pageEval[bool](b, "!!("+predicate+")") {
		if time.Now().After(deadline) {
			b.fail("%s not seen within %s (%s)", what, within, predicate)
		}
		b.click(refresh)
		time.Sleep(time.Second)
	}
}

func (b *consoleBrowser) click(sel string) {
	b.t.Helper()
	b.do("click "+sel, chromedp.Click(chromedp.CSS(sel)))
}

// clickButton clicks the button of scope whose text is text.
func (b *consoleBrowser) clickButton(scope, text string) {
	b.t.Helper()
	ok := pageEval[bool](b, fmt.Sprintf(`(() => { const b = [...document.querySelectorAll(%q + ' button')].find((x) => x.textContent.trim() === %q); if (b) b.click(); return !!b; })()`, scope, text))
	if !ok {
		b.fail("no button %q in %s", text, scope)
	}
}

// set gives an input, textarea or select a value as a user would (input
// and change events).
func (b *consoleBrowser) set(sel, value string) {
	b.t.Helper()
	ok := pageEval[bool](b, fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.value = %q; e.dispatchEvent(new Event('input', {bubbles: true})); e.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`, sel, value))
	if !ok {
		b.fail("no field %s", sel)
	}
}

func (b *consoleBrowser) text(sel string) string {
	b.t.Helper()
	return pageEval[string](b, fmt.Sprintf(`(document.querySelector(%q) || {innerText: ''}).innerText`, sel))
}

func (b *consoleBrowser) view(name string) {
	b.t.Helper()
	b.click(`nav a[data-view="` + name + `"]`)
	b.waitFor("the "+name+" view", `document.querySelector('main[data-view="`+name+`"] h1') !== null`, 10*time.Second)
}

// a11yAudit lists what a keyboard or screen-reader user could not use on
// the page: a form control without a label, a button or link without a
// name, a positive tabindex, a page without a language.
const a11yAudit = `(() => {
  const bad = [];
  if (!document.documentElement.lang) bad.push('html without lang');
  const visible = (e) => e.offsetParent !== null || e.getClientRects().length > 0;
  for (const e of document.querySelectorAll('input, select, textarea')) {
    if (!visible(e) || e.type === 'hidden') continue;
    if (!(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.getAttribute('aria-labelledby')) bad.push('unlabelled ' + e.tagName + '#' + e.id);
  }
  for (const e of document.querySelectorAll('button, a[href]')) {
    if (!visible(e)) continue;
    if (!(e.textContent || '').trim() && !e.getAttribute('aria-label')) bad.push('nameless ' + e.tagName + ' ' + e.outerHTML.slice(0, 80));
  }
  for (const e of document.querySelectorAll('[tabindex]')) {
    if (Number(e.getAttribute('tabindex')) > 0) bad.push('positive tabindex on ' + e.tagName);
  }
  return bad;
})()`

// shot saves a screenshot of the viewport as console-<name>.png in the test
// output folder, and in docs/console when SWITCHBACK_UPDATE_SCREENSHOTS=1,
// after checking the view with a11yAudit.
func (b *consoleBrowser) shot(name string) {
	b.t.Helper()
	if bad := pageEval[[]string](b, a11yAudit); len(bad) > 0 {
		b.t.Errorf("view %s: %s", name, strings.Join(bad, "; "))
	}
	// Let charts and fonts settle a frame.
	pageEval[bool](b, `new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`)
	ctx, cancel := context.WithTimeout(b.tab, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.fail("screenshot %s: %v", name, err)
	}
	if len(png) < 10_000 {
		b.t.Errorf("screenshot %s is %d bytes: a blank page?", name, len(png))
	}
	if err := os.WriteFile(filepath.Join(b.out, "console-"+name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	if os.Getenv("SWITCHBACK_UPDATE_SCREENSHOTS") == "1" {
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "console", name+".png"), png, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
}

// session runs f as the subtest name signed in as key (wantRole), signing
// out after, and reports whether the test may go on: nothing failed so
// far.
func (b *consoleBrowser) session(t *testing.T, name, key, secret, wantRole string, f func(t *testing.T)) bool {
	t.Run(name, func(t *testing.T) {
		b.t = t
		b.signIn(key, secret, wantRole)
		f(t)
		b.signOut()
	})
	return !t.Failed()
}

// signIn signs in with the keyboard only: type the key, Tab, the secret,
// Enter.
func (b *consoleBrowser) signIn(key, secret, wantRole string) {
	b.t.Helper()
	b.waitFor("the sign-in form", `document.querySelector('#sign-key') !== null`, 20*time.Second)
	b.do("type the credentials",
		chromedp.Focus(chromedp.CSS("#sign-key")),
		chromedp.KeyEvent(key),
		chromedp.KeyEvent(kb.Tab),
		chromedp.KeyEvent(secret),
		chromedp.KeyEvent(kb.Enter),
	)
	b.waitFor("signed in as "+wantRole, `document.querySelector('.shell[data-role="`+wantRole+`"]') !== null`, 20*time.Second)
}

func (b *consoleBrowser) signOut() {
	b.t.Helper()
	b.click(".signout")
	b.waitFor("the sign-in form", `document.querySelector('#sign-key') !== null`, 10*time.Second)
	if n := pageEval[int](b, `sessionStorage.length`); n != 0 {
		b.t.Errorf("after signing out sessionStorage holds %d items", n)
	}
}

// TestBinary_ConsoleInChromium drives the web console of the running binary
// (demo data on) in headless Chromium: a reseller signs in with the
// keyboard, creates a rule pointing at a test sink, sends a test
// notification and sees it delivered in the deliveries list, sends one the
// sink refuses and replays it, reads the charts, checks a signature and
// gets a field error from the API; an operator binds a product to the
// reseller's channel (the reseller's rule is notified), raises a change
// notification and sees it go from WAITING to SUCCEEDED, reads a cron
// report; the reseller then sees only that product, another channel's
// reseller sees none of the first one's data, and an admin gets the
// operator's views over every supplier. A reseller whose endpoint fails is
// disabled automatically by the dispatcher, and its settings say why. Every view is saved as a
// screenshot in the test output folder (docs/console has one of each for
// the README). No request leaves the binary's address, no secret is in a
// URL, the page or the binary's logs, and no script fails.
func TestBinary_ConsoleInChromium(t *testing.T) {
	chrome := findChromium(t)
	// A backlog bound of 2 and retries every 2 s let a failing subscriber
	// be disabled automatically within seconds (reseller C below).
	p := startBinary(t, "SWITCHBACK_DEMO_DATA=true", "SWITCHBACK_OUTBOUND_ALLOW_HTTP=true", "SWITCHBACK_OUTBOUND_ALLOW_PRIVATE=true",
		"SWITCHBACK_DISPATCH_BACKLOG_LIMIT=2", "SWITCHBACK_DISPATCH_RETRY_SCHEDULE=2s,2s,2s,2s,2s,2s,2s,2s,2s,2s")
	if !clickHouseUp(t, p) {
		if os.Getenv("SWITCHBACK_REQUIRE_INTEGRATION") == "1" {
			t.Fatal("the console's deliveries need ClickHouse (clickhouse-server) and SWITCHBACK_REQUIRE_INTEGRATION=1")
		}
		t.Skip("the console's deliveries and charts need ClickHouse: install clickhouse-server")
	}
	base := "http://" + p.api
	if !strings.Contains(p.stdout.String(), "Web console "+base+"/console") {
		t.Errorf("the banner does not show the console's address:\n%s", p.stdout.String())
	}
	admin := client{t: t, base: base, key: "demo-admin", secret: "demo-admin-secret"}

	// A second sales channel with its own reseller: the one the console
	// test works as, so that the demo's own subscriber is the "other
	// channel" whose data must stay invisible.
	st, ch, _ := admin.do("POST", "/admin/v1/channels", `{"name":"Console channel","companyName":"Console test reseller"}`)
	if st != 201 {
		t.Fatalf("create channel: %d %v", st, ch)
	}
	channelID, _ := ch["id"].(string)
	reseller, _ := admin.principal(`{"role":"reseller","name":"Console reseller","channelId":"` + channelID + `"}`)
	resKey, resSecret := reseller.key, reseller.secret
	sk := newSink(t)
	const hookPath = "/hooks/channelbinding"
	// Reseller C, on the same channel, whose endpoint always fails: the
	// operator's binding changes fill its backlog and the dispatcher sets
	// its disableAll, which its console explains.
	failing, _ := admin.principal(`{"role":"reseller","name":"Failing reseller","channelId":"` + channelID + `"}`)
	failKey, failSecret := failing.key, failing.secret
	sk.script("/hooks/failing", 503)
	if st, body, _ := failing.do("POST", "/registry/v1.1/channelbindings", `{"url":"`+sk.url+`/hooks/failing"}`); st != 201 {
		t.Fatalf("reseller C's rule: %d %v", st, body)
	}

	// A booking system whose data breaks doc 3's rules, connected by the
	// demo operator as supplier S2: its first full synchronization leaves
	// a cron report with errors.
	broken := &http.Server{Handler: bookingsim.New(bookingsim.Config{APIKey: "console-token", Suppliers: 2, ProductsPerSupplier: 2,
		Break: []string{bookingsim.BreakAvailabilityTyp, bookingsim.BreakVacancies}}), ReadHeaderTimeout: 5 * time.Second}
	bln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = broken.Serve(bln) }()
	t.Cleanup(func() { _ = broken.Close() })
	operator := client{t: t, base: base, key: "demo-operator", secret: "demo-operator-secret"}
	if st, body, _ := operator.do("POST", "/channel/v1.2/suppliers", `{"id":"S2","name":"Broken Boats","code":"BROKEN","connection":{"kind":"bookingsystem","baseUrl":"http://`+bln.Addr().String()+`","credentials":{"bearerToken":"console-token"}}}`); st != 201 {
		t.Fatalf("connect S2: %d %v", st, body)
	}
	// What the sink received: the delivered test, the refused one, and the
	// channelbinding the operator's binding caused.
	var delivered, refused, created received

	b := newConsoleBrowser(t, chrome, base)
	b.do("open the console", chromedp.Navigate(base+"/console"))
	b.waitFor("the console script", `document.documentElement.dataset.console === 'ready'`, 20*time.Second)
	b.shot("sign-in")
	// The audit finds what it looks for: an unlabelled field added here.
	if bad := pageEval[[]string](b, `(() => { const i = document.createElement('input'); i.id = 'probe'; document.body.append(i); const r = `+a11yAudit+`; i.remove(); return r; })()`); len(bad) != 1 || !strings.Contains(bad[0], "probe") {
		t.Fatalf("the accessibility audit found %v, want the unlabelled probe", bad)
	}

	// Wrong credentials: the API's 401, shown as such.
	b.do("type wrong credentials", chromedp.Focus(chromedp.CSS("#sign-key")), chromedp.KeyEvent("nobody"), chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent("wrong"), chromedp.KeyEvent(kb.Enter))
	b.waitFor("the 401", `document.querySelector('.error[data-code="UNAUTHORIZED"]') !== null`, 10*time.Second)
	b.set("#sign-key", "")
	b.set("#sign-secret", "")

	if !b.session(t, "reseller", resKey, resSecret, "reseller", func(t *testing.T) {
		b.waitFor("the rules", `document.querySelector('tr[data-type="channelbinding"] td.actions button') !== null`, 20*time.Second)

		// A rule the API refuses names its field.
		b.clickButton(`tr[data-type="channelbinding"]`, "Create")
		b.set("#rule-channelbinding-url", "ftp://example.invalid/hook")
		b.clickButton(`form[data-form="rule"]`, "Create the rule")
		b.waitFor("the field error", `document.querySelector('form[data-form="rule"] .error .field') !== null`, 10*time.Second)
		if f := b.text(`form[data-form="rule"] .error .field`); f != "url" {
			b.fail("the refused rule names field %q, want url", f)
		}
		b.set("#rule-channelbinding-url", sk.url+hookPath)
		b.clickButton(`form[data-form="rule"]`, "Create the rule")
		b.waitFor("the created rule", `(document.querySelector('tr[data-type="channelbinding"] td.url') || {innerText: ''}).innerText.includes(`+jsString(sk.url+hookPath)+`)`, 15*time.Second)
		_, _, rules := reseller.do("GET", "/registry/v1.1/channelbindings", "")
		if len(rules) != 1 {
			t.Fatalf("the API lists %d channelbinding rules after the console created one", len(rules))
		}
		rule := rules[0].(map[string]any)
		key, _ := rule["securityKey"].(string)

		// Disable and enable it again.
		b.clickButton(`tr[data-type="channelbinding"]`, "Disable")
		b.waitFor("the disabled rule", `(document.querySelector('tr[data-type="channelbinding"] .badge') || {}).textContent === 'disabled'`, 15*time.Second)
		b.clickButton(`tr[data-type="channelbinding"]`, "Enable")
		b.waitFor("the enabled rule", `(document.querySelector('tr[data-type="channelbinding"] .badge') || {}).textContent === 'enabled'`, 15*time.Second)
		if _, _, again := reseller.do("GET", "/registry/v1.1/channelbindings", ""); len(again) != 1 || again[0].(map[string]any)["securityKey"] != key {
			t.Fatalf("switching the rule off and on changed it: %v", again)
		}

		// A supplier rule: created, edited (a supplier filter, one
		// operation kept), deleted.
		b.clickButton(`tr[data-type="supplier"]`, "Create")
		b.set("#rule-supplier-url", sk.url+"/hooks/supplier")
		b.clickButton(`form[data-form="rule"]`, "Create the rule")
		b.waitFor("the supplier rule", `document.querySelector('tr[data-type="supplier"] td.url') !== null`, 15*time.Second)
		b.clickButton(`tr[data-type="supplier"]`, "Edit")
		b.set("#rule-supplier-supplierIDs", "demo-alpine, S1")
		b.clickButton(`form[data-form="rule"]`, "Save the rule")
		b.waitFor("the edit saved", `document.querySelector('form[data-form="rule"]') === null`, 15*time.Second)
		_, _, sup := reseller.do("GET", "/registry/v1.1/supplier", "")
		if len(sup) != 1 || fmt.Sprint(sup[0].(map[string]any)["config"]) != "map[operations:[updated] supplierIDs:[demo-alpine S1]]" {
			t.Fatalf("the edited supplier rule is %v", sup)
		}
		b.clickButton(`tr[data-type="supplier"]`, "Delete")
		b.clickButton(`[aria-labelledby="delete-title"]`, "Delete the rule")
		b.waitFor("the deleted rule", `document.querySelector('tr[data-type="supplier"] td.url') === null && document.querySelector('[aria-labelledby="delete-title"]') === null`, 15*time.Second)
		if _, _, sup := reseller.do("GET", "/registry/v1.1/supplier", ""); len(sup) != 0 {
			t.Fatalf("the API still lists %v after the console deleted it", sup)
		}

		// A test the sink accepts: delivered, and in the deliveries list.
		b.clickButton(`tr[data-type="channelbinding"]`, "Send test")
		b.clickButton(`form[data-form="test"]`, "Send the test")
		b.waitFor("the delivered test", `document.querySelector('[data-test-result="delivered"]') !== null`, 20*time.Second)
		got := sk.waitFor(t, hookPath, 1, 10*time.Second)
		specVerify(t, key, got[0])
		delivered = got[0]
		b.shot("reseller-rules")

		// A test the sink refuses: the subscriber's answer, its code,
		// message and data.
		sk.script(hookPath, 503)
		b.clickButton(`form[data-form="test"]`, "Send the test")
		b.waitFor("the refused test", `document.querySelector('[data-test-result="failed"] .error[data-code="INTERNAL"]') !== null`, 20*time.Second)
		refusal := b.text(`[data-test-result="failed"]`)
		for _, want := range []string{"The subscriber answered 503", "HTTP 500", "INTERNAL", "subscriberStatus", "503", "deliveryId"} {
			if !strings.Contains(refusal, want) {
				b.fail("the refused test does not show %q: %s", want, refusal)
			}
		}
		refused = sk.waitFor(t, hookPath, 2, 10*time.Second)[1]
		if refused.deliveryID == delivered.deliveryID || !strings.Contains(refusal, refused.deliveryID) {
			b.fail("the refused test shows no delivery id %s: %s", refused.deliveryID, refusal)
		}

		// Its attempts, from the link of the refusal; then every delivery.
		b.click(`[data-test-result="failed"] a`)
		b.waitFor("the deliveries view", `document.querySelector('main[data-view="deliveries"]') !== null`, 10*time.Second)
		b.until("the refused test in the log", `[data-action="refresh"]`, fmt.Sprintf(`document.querySelector('tr[data-delivery=%q][data-outcome="failed"]')`, refused.deliveryID), 60*time.Second)
		// Filtered by outcome: the refused test only.
		b.clickButton(".notice", "Show all deliveries")
		b.set("#f-outcome", "failed")
		b.clickButton("form.filters", "Apply")
		b.waitFor("the failed attempts only", fmt.Sprintf(`document.querySelectorAll('tr[data-delivery]').length === 1 && document.querySelector('tr[data-delivery=%q][data-outcome="failed"]') !== null`, refused.deliveryID), 20*time.Second)
		b.set("#f-outcome", "")
		b.clickButton("form.filters", "Apply")
		b.until("the delivered test in the log", `[data-action="refresh"]`, fmt.Sprintf(`document.querySelector('tr[data-delivery=%q][data-outcome="delivered"]')`, delivered.deliveryID), 60*time.Second)
		row := b.text(fmt.Sprintf(`tr[data-delivery=%q]`, delivered.deliveryID))
		if !strings.Contains(row, "200") || !strings.Contains(row, " ms") || !strings.Contains(row, "channelbinding") {
			b.fail("the delivered test's row lacks its status, latency or type: %q", row)
		}

		// Replay the refused one once the sink accepts again.
		sk.script(hookPath, 200)
		b.set("#r-type", "channelbinding")
		b.clickButton(`form[data-form="replay"]`, "Replay")
		b.waitFor("the replay to finish", `document.querySelector('[data-replay="done"]') !== null`, 90*time.Second)
		if s := b.text(`[data-replay="done"]`); !strings.Contains(s, "1 channelbinding notification queued") || !strings.Contains(s, "All 1 delivered") {
			b.fail("replay progress: %q", s)
		}
		again := sk.waitFor(t, hookPath, 3, 10*time.Second)[2]
		if again.deliveryID != refused.deliveryID {
			t.Fatalf("the sink got delivery %s after the replay, want the refused %s", again.deliveryID, refused.deliveryID)
		}
		specVerify(t, key, again)
		b.until("the replayed delivery", `[data-action="refresh"]`, fmt.Sprintf(`document.querySelector('tr[data-delivery=%q][data-outcome="delivered"]')`, refused.deliveryID), 60*time.Second)
		b.shot("reseller-replay")

		// Charts: the three deliveries and the refusal, with latencies.
		b.view("charts")
		b.set("#c-range", "15")
		b.waitFor("the chart totals", `document.querySelector('[data-totals] [data-outcome="delivered"] dd') !== null && document.querySelectorAll('.chart canvas').length === 2`, 30*time.Second)
		if d := b.text(`[data-totals] [data-outcome="delivered"] dd`); d != "2" {
			b.fail("charts count %s delivered, want 2 (the test and the replay)", d)
		}
		if f := b.text(`[data-totals] [data-outcome="failed"] dd`); f != "1" {
			b.fail("charts count %s failed, want 1", f)
		}
		if l := b.text(`[data-totals] [data-latency] dd`); !strings.HasSuffix(l, " ms") {
			b.fail("no latency percentiles: %q", l)
		}
		b.shot("reseller-charts")

		// The signature checker, with the rule's key picked from the rules,
		// then a wrong key; and its SHA-256 without Web Crypto (for plain
		// http pages) against Go's HMAC.
		b.view("signature")
		b.waitFor("the rule picker", hasOption("#sig-rule", "channelbinding"), 10*time.Second)
		b.set("#sig-payload", string(delivered.raw))
		b.set("#sig-rule", "channelbinding")
		if v := pageEval[string](b, `document.querySelector('#sig-key').value`); v != key {
			b.fail("picking the rule gave key %q", v)
		}
		b.clickButton(`form[data-form="signature"]`, "Check the signature")
		b.waitFor("valid", `document.querySelector('[data-signature="valid"]') !== null`, 10*time.Second)
		b.shot("reseller-signature")
		b.set("#sig-key", strings.Repeat("0", 64))
		b.clickButton(`form[data-form="signature"]`, "Check the signature")
		b.waitFor("invalid", `document.querySelector('[data-signature="invalid"]') !== null`, 10*time.Second)
		for _, msg := range []string{"", "1700000000tok", strings.Repeat("x", 200)} {
			mac := hmac.New(sha256.New, []byte(key+"-k"))
			mac.Write([]byte(msg))
			want := hex.EncodeToString(mac.Sum(nil))
			js := fmt.Sprintf(`import('/console/assets/js/signature.js').then((m) => m.hmacHex(%q, %q, {noWebCrypto: true}))`, key+"-k", msg)
			if got := pageEval[string](b, js); got != want {
				t.Errorf("the console's own HMAC-SHA256 of %d bytes = %s, want %s", len(msg), got, want)
			}
		}

		// Delivery settings, opened with the keyboard: a throttle the API
		// refuses shows its field.
		b.do("open the settings with the keyboard", chromedp.Focus(chromedp.CSS(`nav a[data-view="settings"]`)), chromedp.KeyEvent(kb.Enter))
		// The focus moves to the new view's heading (after it rendered).
		b.waitFor("the focus on the settings heading", `document.activeElement && document.activeElement.tagName === 'H1' && document.activeElement.textContent === 'Delivery settings'`, 10*time.Second)
		b.waitFor("the settings", `document.querySelector('#throttle') !== null`, 10*time.Second)
		b.set("#throttle", "5 parsecs")
		b.clickButton(`form[data-setting="throttleDelay"]`, "Save the throttle")
		b.waitFor("the refusal", `document.querySelector('.error .field') !== null`, 10*time.Second)
		if f := b.text(".error .field"); f != "throttleDelay" {
			b.fail("the refused throttle names field %q", f)
		}
		b.set("#throttle", "250ms")
		b.clickButton(`form[data-setting="throttleDelay"]`, "Save the throttle")
		b.waitFor("saved", `document.querySelector('p.ok') !== null`, 10*time.Second)

		// Nothing is bound to this channel yet.
		b.view("catalog")
		b.waitFor("the empty catalog", `document.querySelector('[data-catalog="empty"]') !== null`, 20*time.Second)
	}) {
		return
	}

	if !b.session(t, "operator", "demo-operator", "demo-operator-secret", "operator", func(t *testing.T) {
		b.waitFor("the suppliers", `document.querySelector('tr[data-supplier="S1"]') !== null && document.querySelector('tr[data-supplier="demo-alpine"]') !== null`, 30*time.Second)
		// S1's first synchronization left a cron report; wait for it if the
		// demo is still starting.
		b.until("S1's last synchronization", `.view .buttons button`, `!document.querySelector('tr[data-supplier="S1"]').innerText.includes('never')`, 60*time.Second)
		s1 := b.text(`tr[data-supplier="S1"]`)
		for _, want := range []string{"bookingsystem", "bearerToken"} {
			if !strings.Contains(s1, want) {
				b.fail("S1's row lacks %q: %s", want, s1)
			}
		}
		// The newest synchronization is the first full one, or one of the
		// change notifications the demo raises for S1 every few ticks
		// (cmd/switchback/internal/demo): either way it succeeded and the row says which.
		if st := pageEval[string](b, `document.querySelector('tr[data-supplier="S1"]').dataset.state`); st != "ok" {
			b.fail("S1's state is %q, want ok: %s", st, s1)
		}
		full := strings.Contains(s1, "full synchronization") && strings.Contains(s1, "had no error")
		change := strings.Contains(s1, "change notification SUCCEEDED") && strings.Contains(s1, "succeeded")
		if !full && !change {
			b.fail("S1's row does not say its last synchronization (full, or a change notification) succeeded: %s", s1)
		}
		b.until("S2's report with errors", `.view .buttons button`, `document.querySelector('tr[data-supplier="S2"][data-state="degraded"]')`, 60*time.Second)
		if s2 := b.text(`tr[data-supplier="S2"]`); !strings.Contains(s2, "reported") || !strings.Contains(s2, "error(s)") {
			b.fail("S2's row does not say its synchronization reported errors: %s", s2)
		}
		b.shot("operator-suppliers")

		// Bind demo-glacier's adult rate to the console channel.
		b.view("bindings")
		b.waitFor("the supplier list", hasOption("#b-supplier", "demo-alpine"), 10*time.Second)
		b.set("#b-supplier", "demo-alpine")
		b.waitFor("the product list", hasOption("#b-product", "demo-glacier"), 10*time.Second)
		b.set("#b-product", "demo-glacier")
		row := fmt.Sprintf(`tr[data-channel=%q]`, channelID)
		b.waitFor("the console channel's row", `document.querySelector('`+row+` input[data-option="demo-adult"]') !== null`, 15*time.Second)
		b.click(row + ` input[data-option="demo-adult"]`)
		b.click(row + ` button[data-action="bind"]`)
		b.waitFor("the binding", `document.querySelector('`+row+`').dataset.bound === 'demo-adult'`, 20*time.Second)
		// Unbind and bind again: three channelbinding notifications
		// (created, removed, created) for the channel's subscribers.
		b.click(row + ` button[data-action="unbind"]`)
		b.waitFor("the unbinding", `document.querySelector('`+row+`').dataset.bound === ''`, 20*time.Second)
		b.click(row + ` input[data-option="demo-adult"]`)
		b.click(row + ` button[data-action="bind"]`)
		b.waitFor("the binding again", `document.querySelector('`+row+`').dataset.bound === 'demo-adult'`, 20*time.Second)
		b.shot("operator-bindings")
		// The reseller's channelbinding rule hears of it through the whole
		// pipeline.
		deadline := time.Now().Add(60 * time.Second)
		for created.raw == nil {
			for _, r := range sk.on(hookPath) {
				if r.body["operation"] == "created" && r.body["productID"] == "demo-glacier" {
					created = r
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no channelbinding created for demo-glacier reached the reseller's rule; sink got %d POSTs", len(sk.on(hookPath)))
			}
			time.Sleep(100 * time.Millisecond)
		}

		// A change notification for S1's product, followed to the end.
		b.view("notifications")
		b.waitFor("the supplier list", hasOption("#cn-supplier", "S1"), 10*time.Second)
		b.set("#cn-supplier", "S1")
		b.waitFor("S1's products", hasOption("#cn-product", "S1-P1"), 10*time.Second)
		b.set("#cn-product", "S1-P1")
		b.clickButton(`form[data-form="notification"]`, "Raise it")
		b.waitFor("SUCCEEDED", `document.querySelector('[data-tracker][data-status="SUCCEEDED"]') !== null`, 90*time.Second)
		seen := pageEval[string](b, `document.querySelector('[data-tracker]').dataset.seen`)
		if !strings.HasPrefix(seen, "WAITING,") || !strings.HasSuffix(seen, ",SUCCEEDED") {
			b.fail("the tracker saw %q, want WAITING first and SUCCEEDED last", seen)
		}
		if ts := b.text(`[data-tracker] dl.timestamps`); strings.Count(ts, "—") != 0 {
			b.fail("a finished request lacks a timestamp: %q", ts)
		}
		b.shot("operator-notifications")

		b.view("cron")
		b.waitFor("a report with errors", `document.querySelector('tr[data-report]:not([data-errors="0"])') !== null`, 20*time.Second)
		b.click(`tr[data-report]:not([data-errors="0"]) button`)
		b.waitFor("its errors", `document.querySelectorAll('[data-report-detail] table.error-report tbody tr').length > 0`, 10*time.Second)
		if rep := b.text("[data-report-detail]"); !strings.Contains(rep, "S2") {
			b.fail("the report with errors is not S2's: %s", rep)
		}
		b.shot("operator-cron")
	}) {
		return
	}

	t.Run("a subscriber disabled automatically sees why", func(t *testing.T) {
		b.t = t
		deadline := time.Now().Add(90 * time.Second)
		for {
			_, md, _ := failing.do("GET", "/registry/v1.1/metadata", "")
			if md["disableAll"] == true {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("reseller C's disableAll was not set automatically within 90 s: %v (its sink got %d POSTs)", md, len(sk.on("/hooks/failing")))
			}
			time.Sleep(250 * time.Millisecond)
		}
		b.signIn(failKey, failSecret, "reseller")
		b.view("settings")
		b.until("the automatic disable's reason", `[data-action="refresh"]`, `document.querySelector('[data-auto-disabled]')`, 60*time.Second)
		why := b.text("[data-auto-disabled]")
		for _, want := range []string{"Set automatically", "backlog bound reached while failing", "of 2"} {
			if !strings.Contains(why, want) {
				b.fail("the automatic disable does not show %q: %s", want, why)
			}
		}
		b.shot("reseller-settings")
		b.signOut()
	})
	if t.Failed() {
		return
	}

	if !b.session(t, "reseller sees its channel only", resKey, resSecret, "reseller", func(t *testing.T) {
		b.view("catalog")
		b.waitFor("the bound product", `document.querySelector('tr[data-product="demo-glacier"]') !== null`, 20*time.Second)
		cat := b.text("main")
		// The demo channel's other products and supplier are not bound here.
		for _, other := range []string{"demo-canyon", "S1-P1", "Fjord Lines", "demo-child"} {
			if strings.Contains(cat, other) {
				b.fail("the console channel's catalog shows %q, bound to another channel only", other)
			}
		}
		b.shot("reseller-catalog")
		b.view("deliveries")
		b.until("the channelbinding created", `[data-action="refresh"]`, fmt.Sprintf(`document.querySelector('tr[data-delivery=%q][data-outcome="delivered"]')`, created.deliveryID), 60*time.Second)
		b.shot("reseller-deliveries")

		// A phone's width: one column, nothing wider than the screen.
		b.do("phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
		b.waitFor("the narrow layout", `document.documentElement.clientWidth <= 400`, 5*time.Second)
		if w := pageEval[int](b, `document.documentElement.scrollWidth - document.documentElement.clientWidth`); w > 0 {
			b.fail("at phone width the page is %d px wider than the screen", w)
		}
		pageEval[bool](b, `(document.querySelector('table.deliveries').scrollIntoView(), true)`)
		b.shot("phone-deliveries")
		b.do("desktop viewport", chromedp.EmulateViewport(1280, 800))
	}) {
		return
	}

	b.session(t, "another channel's reseller sees none of it", "demo-reseller", "demo-reseller-secret", "reseller", func(t *testing.T) {
		b.waitFor("the rules", `document.querySelector('tr[data-type="channelbinding"] td.actions button') !== null`, 20*time.Second)
		if txt := b.text("main"); strings.Contains(txt, sk.url) || strings.Contains(txt, rulesID(t, reseller)) {
			b.fail("demo-reseller's rules show the console reseller's rule")
		}
		b.view("deliveries")
		b.set("#f-delivery", delivered.deliveryID)
		b.clickButton(`form.filters`, "Apply")
		b.waitFor("the filtered list", `document.querySelector('table.deliveries td.muted') !== null`, 20*time.Second)
		if n := pageEval[int](b, `document.querySelectorAll('tr[data-delivery]').length`); n != 0 {
			b.fail("demo-reseller sees %d attempts of the console reseller's delivery", n)
		}
		b.view("catalog")
		b.waitFor("its own catalog", `document.querySelector('[data-supplier]') !== null`, 20*time.Second)
		if strings.Contains(b.text("main"), "Console channel") {
			b.fail("demo-reseller's catalog names the console channel")
		}
	})

	b.session(t, "an admin gets the operator's views over every supplier", "demo-admin", "demo-admin-secret", "admin", func(t *testing.T) {
		b.waitFor("every supplier", `['S1', 'S2', 'demo-alpine'].every((id) => document.querySelector('tr[data-supplier="' + id + '"]'))`, 30*time.Second)
	})

	// What the page did: only the binary's address, no secret in any URL,
	// nothing kept beyond the tab's session, no script error.
	b.log.mu.Lock()
	defer b.log.mu.Unlock()
	secrets := []string{resSecret, failSecret, "demo-operator-secret", "demo-reseller-secret"}
	for _, u := range b.log.requests {
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "data" && pu.Host != p.api) {
			t.Errorf("the page asked for %s: the console must use the binary's address only", u)
		}
		for _, s := range secrets {
			if strings.Contains(u, s) || strings.Contains(u, url.QueryEscape(s)) {
				t.Errorf("a secret is in the URL %s", u)
			}
		}
	}
	if len(b.log.requests) < 50 {
		t.Errorf("only %d requests recorded: the listener saw nothing?", len(b.log.requests))
	}
	for _, e := range b.log.exceptions {
		t.Errorf("uncaught exception in the page: %s", e)
	}
	for _, e := range b.log.errors {
		t.Errorf("browser error: %s", e)
	}
	for _, s := range []string{resSecret, failSecret} {
		if strings.Contains(p.stdout.String(), s) || strings.Contains(p.stderr.String(), s) {
			t.Errorf("the binary's output holds a reseller secret")
		}
	}
	if ls := pageEval[int](b, `localStorage.length + document.cookie.length`); ls != 0 {
		t.Errorf("the console left %d items in localStorage or cookies", ls)
	}
	t.Logf("console: %d requests, screenshots in %s", len(b.log.requests), b.out)
}

// rulesID is the id of the console reseller's channelbinding rule.
func rulesID(t *testing.T, c client) string {
	t.Helper()
	_, _, rules := c.do("GET", "/registry/v1.1/channelbindings", "")
	if len(rules) != 1 {
		t.Fatalf("%d rules", len(rules))
	}
	id, _ := rules[0].(map[string]any)["id"].(string)
	return id
}

// hasOption is a predicate: the select has an option of that value (Preact
// sets an option's value as a property, not an attribute).
func hasOption(sel, value string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%q)].some((o) => o.value === %q)`, sel+" option", value)
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestREADME_ShowsTheConsoleScreenshots: every screenshot the README
// embeds is committed, and the README shows the console's.
func TestREADME_ShowsTheConsoleScreenshots(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "docs/console/reseller-deliveries.png") {
		t.Error("README does not show the console (docs/console/reseller-deliveries.png)")
	}
	for _, name := range consoleDocsShots {
		fi, err := os.Stat(filepath.Join("..", "..", "docs", "console", name+".png"))
		if err != nil || fi.Size() < 10_000 {
			t.Errorf("docs/console/%s.png: %v (run the console test with SWITCHBACK_UPDATE_SCREENSHOTS=1)", name, err)
		}
	}
}

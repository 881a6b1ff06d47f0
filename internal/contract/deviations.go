package contract

import (
	"fmt"
	"slices"
	"strings"
)

// Deviation is a known way the service leaves its documents today, that an
// open issue will remove. The documents say what the contract is (they are
// not weakened to fit the service); these entries keep such a difference
// from failing the tests meanwhile, and are counted and printed apart. The
// list must shrink: an entry whose issue landed is deleted, and the tests
// then hold the service to the document.
type Deviation struct {
	// Issue names the issue and its item, and says what is wrong.
	Issue string
	// Method and Routes are the operations (documented path templates)
	// where it occurs.
	Method string
	Routes []string
	// Messages are parts of the violation's message; one is enough.
	Messages []string
}

func (d *Deviation) String() string {
	return fmt.Sprintf("%s [%s %s: %q]", d.Issue, d.Method, strings.Join(d.Routes, " | "), d.Messages)
}

func (d *Deviation) matches(v Violation) bool {
	return v.Method == d.Method && slices.Contains(d.Routes, v.Route) &&
		slices.ContainsFunc(d.Messages, func(m string) bool { return strings.Contains(v.Message, m) })
}

// both is a path of the reseller API under /v1.2 and /v1.3.
func both(path string) []string { return []string{"/v1.2" + path, "/v1.3" + path} }

// KnownDeviations are the exchange-level deviations, read by New (a table,
// never written). A run of the whole binary suite fails on an entry that no
// exchange matched (cmd/switchback TestMain, Checker.Unseen): it is stale
// and is deleted. Empty: issue 19
// removed every one this list held (booking-system holds and bookings
// without retrieved, item ids, embedded Rates and bookingItemIds; a
// cancelled booking still cancelable; two meta keys in the price schedule
// answer; cancel answering 200 with a body; 404s outside the spec's status
// lists). An entry names its issue and item, the operations (method and
// documented path templates) and a part of the violation's message:
//
//	{Issue: "issue N, item M: what is wrong", Method: "GET",
//	 Routes: both("/suppliers/{supplier_id}"), Messages: []string{"..."}}
var KnownDeviations []*Deviation

// KnownUnserved are documented routes the service does not serve yet
// (TestRegisterAPI_ServesWhatTheDocumentsList fails on an entry that is
// served). Empty: issue 19 added the v1.3 products and rates routes.
var KnownUnserved []struct {
	Issue, Method, Route string
}

func (c *Checker) matchKnown(v Violation) *Deviation {
	for _, d := range c.deviations {
		if d.matches(v) {
			return d
		}
	}
	return nil
}

package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/switchbackhq/switchback/schemas"
)

// TestInput is the body of POST /<type>/test/{id} (spec doc 1, Registry
// endpoints): the payload fields of the type, without the signature, which
// the sender adds. A nil field was not sent.
type TestInput struct {
	SupplierID               *string
	ProductID                *string
	RateID                   *string
	Start                    *string
	End                      *string
	BookingID                *string
	StartTime                *string
	ResellerBookingReference *string
	Operation                *string
}

// Test body field names, as in the webhook payloads.
const (
	testSupplierID  = "supplierID"
	testProductID   = "productID"
	testRateID      = "rateID"
	testStart       = "start"
	testEnd         = "end"
	testBookingID   = "bookingID"
	testStartTime   = "startTime"
	testResellerRef = "resellerBookingReference"
	testOperation   = "operation"
)

// testFields lists the body fields each type's test takes.
var testFields = map[string][]string{
	schemas.TypeChannelBinding: {testSupplierID, testProductID, testOperation},
	schemas.TypeSupplier:       {testSupplierID, testOperation},
	schemas.TypeProduct:        {testSupplierID, testProductID, testOperation},
	schemas.TypeRate:           {testSupplierID, testProductID, testRateID, testOperation},
	schemas.TypeAvailability:   {testSupplierID, testProductID, testRateID, testStart, testEnd},
	schemas.TypePriceSchedule:  {testSupplierID, testProductID, testStart, testEnd},
	schemas.TypeBooking:        {testBookingID, testStartTime, testResellerRef, testOperation},
}

// TestNotification finds the subscriber's rule of the type with that id
// (else ErrNotFound) and builds the one notification its test endpoint
// sends, from in (validated per type). The notification is not queued: the
// caller sends it at once, disabled rule and disableAll notwithstanding (a
// test is an explicit request to check the endpoint).
func (r *Registry) TestNotification(ctx context.Context, subscriber, typ, id string, in TestInput) (Rule, schemas.Notification, error) {
	rule, err := r.Rule(ctx, subscriber, typ)
	if err != nil {
		return Rule{}, schemas.Notification{}, err
	}
	if rule.ID != id {
		return Rule{}, schemas.Notification{}, fmt.Errorf("%s rule %s: %w", typ, id, ErrNotFound)
	}
	n, err := BuildTestNotification(subscriber, typ, in, r.now())
	if err != nil {
		return Rule{}, schemas.Notification{}, err
	}
	return rule, n, nil
}

// BuildTestNotification validates in against the type's test body and
// returns the notification (Source "test", a fresh delivery id). It does
// no I/O.
func BuildTestNotification(subscriber, typ string, in TestInput, now time.Time) (schemas.Notification, error) {
	allowed, ok := testFields[typ]
	if !ok {
		return schemas.Notification{}, fmt.Errorf("rule type %q: %w", typ, ErrNotFound)
	}
	b := newTestBody(in)
	if err := b.onlyFields(typ, allowed); err != nil {
		return schemas.Notification{}, err
	}
	payload, entity := b.payload(typ)
	if b.err != nil {
		return schemas.Notification{}, b.err
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return schemas.Notification{}, fmt.Errorf("encode %s test payload: %w", typ, err)
	}
	return schemas.Notification{
		ID: uuid.NewString(), Subscriber: subscriber, Type: typ, EntityKey: typ + ":" + entity,
		Payload: raw, CreatedAt: now.UTC(), Source: "test",
	}, nil
}

// testBody reads the fields of a test body. Its readers keep the first
// validation error in err and return zero values once it is set, so a
// payload is built in one expression and the error reported is the one
// of the first field read (the payload's field order).
type testBody struct {
	sent map[string]*string
	err  error
}

func newTestBody(in TestInput) *testBody {
	return &testBody{sent: map[string]*string{
		testSupplierID: in.SupplierID, testProductID: in.ProductID, testRateID: in.RateID,
		testStart: in.Start, testEnd: in.End, testBookingID: in.BookingID, testStartTime: in.StartTime,
		testResellerRef: in.ResellerBookingReference, testOperation: in.Operation,
	}}
}

// onlyFields rejects a field sent that is not one of the type's test.
// The fields are checked in a fixed order, so the error names the same
// field whatever the map's order.
func (b *testBody) onlyFields(typ string, allowed []string) error {
	for _, name := range []string{testSupplierID, testProductID, testRateID, testStart, testEnd, testBookingID, testStartTime, testResellerRef, testOperation} {
		if b.sent[name] != nil && !contains(allowed, name) {
			return invalid(name, fmt.Sprintf("is not a field of the %s test notification (fields: %s)", typ, strings.Join(allowed, ", ")))
		}
	}
	return nil
}

// payload builds the type's test payload and its entity key (the
// EntityKey after "<type>:").
func (b *testBody) payload(typ string) (any, string) {
	switch typ {
	case schemas.TypeChannelBinding:
		p := schemas.ChannelBindingPayload{SupplierID: b.required(testSupplierID), ProductID: b.required(testProductID),
			Operation: b.operation(typeSpecs[typ].operations, "")}
		return p, p.SupplierID + "/" + p.ProductID
	case schemas.TypeSupplier:
		p := schemas.SupplierPayload{SupplierID: b.required(testSupplierID), Operation: b.operation([]string{OpUpdated}, OpUpdated)}
		return p, p.SupplierID
	case schemas.TypeProduct:
		p := schemas.ProductPayload{SupplierID: b.required(testSupplierID), ProductID: b.required(testProductID),
			Operation: b.operation([]string{OpUpdated}, OpUpdated)}
		return p, p.SupplierID + "/" + p.ProductID
	case schemas.TypeRate:
		p := schemas.RatePayload{SupplierID: b.required(testSupplierID), ProductID: b.required(testProductID), RateID: b.required(testRateID),
			Operation: b.operation([]string{OpUpdated}, OpUpdated)}
		return p, p.SupplierID + "/" + p.ProductID + "/" + p.RateID
	case schemas.TypeAvailability:
		p := schemas.AvailabilityPayload{SupplierID: b.required(testSupplierID), ProductID: b.required(testProductID), RateID: b.required(testRateID)}
		p.Start, p.End = b.window()
		return p, p.SupplierID + "/" + p.ProductID + "/" + p.RateID
	case schemas.TypePriceSchedule:
		p := schemas.PriceSchedulePayload{SupplierID: b.required(testSupplierID), ProductID: b.required(testProductID)}
		p.Start, p.End = b.window()
		return p, p.SupplierID + "/" + p.ProductID
	case schemas.TypeBooking:
		p := b.bookingPayload()
		return p, p.BookingID
	}
	return nil, ""
}

// bookingPayload is the booking type's test payload.
func (b *testBody) bookingPayload() schemas.BookingPayload {
	p := schemas.BookingPayload{BookingID: b.required(testBookingID)}
	p.StartTime, _ = b.timestamp(testStartTime)
	if v := b.sent[testResellerRef]; v != nil && b.err == nil {
		if len(*v) > 256 || !printableASCII(*v) {
			b.err = invalid(testResellerRef, "must be at most 256 printable characters")
		}
		p.ResellerBookingReference = *v
	}
	// Spec doc 1: "operation (only canceled is supported)".
	p.Operation = b.operation([]string{OpCanceled}, OpCanceled)
	return p
}

// required returns a placeholder-friendly id: any printable text.
func (b *testBody) required(name string) string {
	v := b.sent[name]
	if b.err != nil {
		return ""
	}
	if v == nil || *v == "" {
		b.err = invalid(name, "is required")
		return ""
	}
	if len(*v) > MaxIDLen || !printableASCII(*v) {
		b.err = invalid(name, fmt.Sprintf("must be 1 to %d printable characters", MaxIDLen))
		return ""
	}
	return *v
}

// timestamp returns a required RFC 3339 field as sent and parsed.
func (b *testBody) timestamp(name string) (string, time.Time) {
	s := b.required(name)
	if b.err != nil {
		return "", time.Time{}
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		b.err = invalid(name, "must be an RFC 3339 timestamp such as 2025-06-01T10:00:00Z")
	}
	return s, t
}

// operation checks the operation; def is used when it was not sent
// ("" makes it required).
func (b *testBody) operation(ops []string, def string) string {
	v := b.sent[testOperation]
	if b.err != nil {
		return ""
	}
	if v == nil || *v == "" {
		if def == "" {
			b.err = invalid(testOperation, fmt.Sprintf("is required (%s)", strings.Join(ops, ", ")))
		}
		return def
	}
	if !contains(ops, *v) {
		b.err = invalid(testOperation, fmt.Sprintf("must be %s, not %q", strings.Join(quoteAll(ops), " or "), *v))
	}
	return *v
}

// window returns the start and end timestamps, end after start.
func (b *testBody) window() (string, string) {
	start, s := b.timestamp(testStart)
	end, e := b.timestamp(testEnd)
	if b.err == nil && !s.Before(e) {
		b.err = invalid(testEnd, "must be after start")
	}
	return start, end
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func quoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

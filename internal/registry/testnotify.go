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
	sent := map[string]*string{
		testSupplierID: in.SupplierID, testProductID: in.ProductID, testRateID: in.RateID,
		testStart: in.Start, testEnd: in.End, testBookingID: in.BookingID, testStartTime: in.StartTime,
		testResellerRef: in.ResellerBookingReference, testOperation: in.Operation,
	}
	for _, name := range []string{testSupplierID, testProductID, testRateID, testStart, testEnd, testBookingID, testStartTime, testResellerRef, testOperation} {
		if sent[name] != nil && !contains(allowed, name) {
			return schemas.Notification{}, invalid(name, fmt.Sprintf("is not a field of the %s test notification (fields: %s)", typ, strings.Join(allowed, ", ")))
		}
	}
	var err error
	// required returns a placeholder-friendly id: any printable text.
	required := func(name string) string {
		v := sent[name]
		if err != nil {
			return ""
		}
		if v == nil || *v == "" {
			err = invalid(name, "is required")
			return ""
		}
		if len(*v) > MaxIDLen || !printableASCII(*v) {
			err = invalid(name, fmt.Sprintf("must be 1 to %d printable characters", MaxIDLen))
			return ""
		}
		return *v
	}
	timestamp := func(name string) (string, time.Time) {
		s := required(name)
		if err != nil {
			return "", time.Time{}
		}
		t, perr := time.Parse(time.RFC3339, s)
		if perr != nil {
			err = invalid(name, "must be an RFC 3339 timestamp such as 2025-06-01T10:00:00Z")
		}
		return s, t
	}
	// operation checks the operation; def is used when it was not sent
	// ("" makes it required).
	operation := func(ops []string, def string) string {
		v := sent[testOperation]
		if err != nil {
			return ""
		}
		if v == nil || *v == "" {
			if def == "" {
				err = invalid(testOperation, fmt.Sprintf("is required (%s)", strings.Join(ops, ", ")))
			}
			return def
		}
		if !contains(ops, *v) {
			err = invalid(testOperation, fmt.Sprintf("must be %s, not %q", strings.Join(quoteAll(ops), " or "), *v))
		}
		return *v
	}
	window := func() (string, string) {
		start, s := timestamp(testStart)
		end, e := timestamp(testEnd)
		if err == nil && !s.Before(e) {
			err = invalid(testEnd, "must be after start")
		}
		return start, end
	}

	var payload any
	var entity string
	switch typ {
	case schemas.TypeChannelBinding:
		p := schemas.ChannelBindingPayload{SupplierID: required(testSupplierID), ProductID: required(testProductID),
			Operation: operation(typeSpecs[typ].operations, "")}
		payload, entity = p, p.SupplierID+"/"+p.ProductID
	case schemas.TypeSupplier:
		p := schemas.SupplierPayload{SupplierID: required(testSupplierID), Operation: operation([]string{OpUpdated}, OpUpdated)}
		payload, entity = p, p.SupplierID
	case schemas.TypeProduct:
		p := schemas.ProductPayload{SupplierID: required(testSupplierID), ProductID: required(testProductID),
			Operation: operation([]string{OpUpdated}, OpUpdated)}
		payload, entity = p, p.SupplierID+"/"+p.ProductID
	case schemas.TypeRate:
		p := schemas.RatePayload{SupplierID: required(testSupplierID), ProductID: required(testProductID), RateID: required(testRateID),
			Operation: operation([]string{OpUpdated}, OpUpdated)}
		payload, entity = p, p.SupplierID+"/"+p.ProductID+"/"+p.RateID
	case schemas.TypeAvailability:
		p := schemas.AvailabilityPayload{SupplierID: required(testSupplierID), ProductID: required(testProductID), RateID: required(testRateID)}
		p.Start, p.End = window()
		payload, entity = p, p.SupplierID+"/"+p.ProductID+"/"+p.RateID
	case schemas.TypePriceSchedule:
		p := schemas.PriceSchedulePayload{SupplierID: required(testSupplierID), ProductID: required(testProductID)}
		p.Start, p.End = window()
		payload, entity = p, p.SupplierID+"/"+p.ProductID
	case schemas.TypeBooking:
		p := schemas.BookingPayload{BookingID: required(testBookingID)}
		p.StartTime, _ = timestamp(testStartTime)
		if v := in.ResellerBookingReference; v != nil && err == nil {
			if len(*v) > 256 || !printableASCII(*v) {
				err = invalid(testResellerRef, "must be at most 256 printable characters")
			}
			p.ResellerBookingReference = *v
		}
		// Spec doc 1: "operation (only canceled is supported)".
		p.Operation = operation([]string{OpCanceled}, OpCanceled)
		payload, entity = p, p.BookingID
	}
	if err != nil {
		return schemas.Notification{}, err
	}
	raw, merr := json.Marshal(payload)
	if merr != nil {
		return schemas.Notification{}, fmt.Errorf("encode %s test payload: %w", typ, merr)
	}
	return schemas.Notification{
		ID: uuid.NewString(), Subscriber: subscriber, Type: typ, EntityKey: typ + ":" + entity,
		Payload: raw, CreatedAt: now.UTC(), Source: "test",
	}, nil
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

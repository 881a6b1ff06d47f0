package registry

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/schemas"
)

func s(v string) *string { return &v }

func TestBuildTestNotification_BuildsThePayloadOfEachType(t *testing.T) {
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		typ  string
		in   TestInput
		want string
	}{
		{schemas.TypeChannelBinding, TestInput{SupplierID: s("S1"), ProductID: s("P1"), Operation: s("removed")},
			`{"supplierID":"S1","productID":"P1","operation":"removed"}`},
		{schemas.TypeSupplier, TestInput{SupplierID: s("S1"), Operation: s("updated")},
			`{"supplierID":"S1","operation":"updated"}`},
		{schemas.TypeSupplier, TestInput{SupplierID: s("S1")},
			`{"supplierID":"S1","operation":"updated"}`},
		{schemas.TypeProduct, TestInput{SupplierID: s("S1"), ProductID: s("P1"), Operation: s("updated")},
			`{"supplierID":"S1","productID":"P1","operation":"updated"}`},
		{schemas.TypeRate, TestInput{SupplierID: s("S1"), ProductID: s("P1"), RateID: s("R1")},
			`{"supplierID":"S1","productID":"P1","rateID":"R1","operation":"updated"}`},
		{schemas.TypeAvailability, TestInput{SupplierID: s("S1"), ProductID: s("P1"), RateID: s("R1"), Start: s("2025-06-02T00:00:00Z"), End: s("2025-06-03T00:00:00+02:00")},
			`{"supplierID":"S1","productID":"P1","rateID":"R1","start":"2025-06-02T00:00:00Z","end":"2025-06-03T00:00:00+02:00"}`},
		{schemas.TypePriceSchedule, TestInput{SupplierID: s("S1"), ProductID: s("P1"), Start: s("2025-06-02T00:00:00Z"), End: s("2025-06-09T00:00:00Z")},
			`{"supplierID":"S1","productID":"P1","start":"2025-06-02T00:00:00Z","end":"2025-06-09T00:00:00Z"}`},
		{schemas.TypeBooking, TestInput{BookingID: s("B1"), StartTime: s("2025-06-02T09:30:00Z"), ResellerBookingReference: s("REF-7"), Operation: s("canceled")},
			`{"bookingID":"B1","startTime":"2025-06-02T09:30:00Z","resellerBookingReference":"REF-7","operation":"canceled"}`},
		{schemas.TypeBooking, TestInput{BookingID: s("B1"), StartTime: s("2025-06-02T09:30:00Z")},
			`{"bookingID":"B1","startTime":"2025-06-02T09:30:00Z","operation":"canceled"}`},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			n, err := BuildTestNotification(subA, tt.typ, tt.in, now)
			if err != nil {
				t.Fatal(err)
			}
			if string(n.Payload) != tt.want {
				t.Fatalf("payload %s\nwant    %s", n.Payload, tt.want)
			}
			if n.ID == "" || n.Subscriber != subA || n.Type != tt.typ || n.Source != "test" || !n.CreatedAt.Equal(now) || n.EntityKey == "" {
				t.Fatalf("notification %+v", n)
			}
			if !json.Valid(n.Payload) {
				t.Fatal("payload is not JSON")
			}
		})
	}
}

func TestBuildTestNotification_RejectsInvalidBodiesNamingTheField(t *testing.T) {
	window := func(in TestInput) TestInput {
		in.Start, in.End = s("2025-06-02T00:00:00Z"), s("2025-06-03T00:00:00Z")
		return in
	}
	tests := []struct {
		name, typ string
		in        TestInput
		field     string
	}{
		{"channelbinding without operation", schemas.TypeChannelBinding, TestInput{SupplierID: s("S"), ProductID: s("P")}, "operation"},
		{"channelbinding bad operation", schemas.TypeChannelBinding, TestInput{SupplierID: s("S"), ProductID: s("P"), Operation: s("deleted")}, "operation"},
		{"channelbinding without productID", schemas.TypeChannelBinding, TestInput{SupplierID: s("S"), Operation: s("created")}, "productID"},
		{"channelbinding empty supplierID", schemas.TypeChannelBinding, TestInput{SupplierID: s(""), ProductID: s("P"), Operation: s("created")}, "supplierID"},
		{"supplier without supplierID", schemas.TypeSupplier, TestInput{Operation: s("updated")}, "supplierID"},
		{"supplier created", schemas.TypeSupplier, TestInput{SupplierID: s("S"), Operation: s("created")}, "operation"},
		{"supplier with productID", schemas.TypeSupplier, TestInput{SupplierID: s("S"), ProductID: s("P")}, "productID"},
		{"product with rateID", schemas.TypeProduct, TestInput{SupplierID: s("S"), ProductID: s("P"), RateID: s("R")}, "rateID"},
		{"product removed", schemas.TypeProduct, TestInput{SupplierID: s("S"), ProductID: s("P"), Operation: s("removed")}, "operation"},
		{"rate without rateID", schemas.TypeRate, TestInput{SupplierID: s("S"), ProductID: s("P")}, "rateID"},
		{"rate with start", schemas.TypeRate, TestInput{SupplierID: s("S"), ProductID: s("P"), RateID: s("R"), Start: s("2025-06-02T00:00:00Z")}, "start"},
		{"availability without end", schemas.TypeAvailability, TestInput{SupplierID: s("S"), ProductID: s("P"), RateID: s("R"), Start: s("2025-06-02T00:00:00Z")}, "end"},
		{"availability date only", schemas.TypeAvailability, TestInput{SupplierID: s("S"), ProductID: s("P"), RateID: s("R"), Start: s("2025-06-02"), End: s("2025-06-03T00:00:00Z")}, "start"},
		{"availability end before start", schemas.TypeAvailability, TestInput{SupplierID: s("S"), ProductID: s("P"), RateID: s("R"), Start: s("2025-06-03T00:00:00Z"), End: s("2025-06-02T00:00:00Z")}, "end"},
		{"availability empty window", schemas.TypeAvailability, TestInput{SupplierID: s("S"), ProductID: s("P"), RateID: s("R"), Start: s("2025-06-03T00:00:00Z"), End: s("2025-06-03T00:00:00Z")}, "end"},
		{"availability with operation", schemas.TypeAvailability, window(TestInput{SupplierID: s("S"), ProductID: s("P"), RateID: s("R"), Operation: s("updated")}), "operation"},
		{"priceschedule without productID", schemas.TypePriceSchedule, window(TestInput{SupplierID: s("S")}), "productID"},
		{"priceschedule with rateID", schemas.TypePriceSchedule, window(TestInput{SupplierID: s("S"), ProductID: s("P"), RateID: s("R")}), "rateID"},
		{"priceschedule end not RFC 3339", schemas.TypePriceSchedule, TestInput{SupplierID: s("S"), ProductID: s("P"), Start: s("2025-06-02T00:00:00Z"), End: s("tomorrow")}, "end"},
		{"booking without bookingID", schemas.TypeBooking, TestInput{StartTime: s("2025-06-02T09:30:00Z")}, "bookingID"},
		{"booking without startTime", schemas.TypeBooking, TestInput{BookingID: s("B")}, "startTime"},
		{"booking startTime not RFC 3339", schemas.TypeBooking, TestInput{BookingID: s("B"), StartTime: s("2025-06-02 09:30")}, "startTime"},
		{"booking tickets-added is not testable", schemas.TypeBooking, TestInput{BookingID: s("B"), StartTime: s("2025-06-02T09:30:00Z"), Operation: s("tickets-added")}, "operation"},
		{"booking with supplierID", schemas.TypeBooking, TestInput{BookingID: s("B"), StartTime: s("2025-06-02T09:30:00Z"), SupplierID: s("S")}, "supplierID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := BuildTestNotification(subA, tt.typ, tt.in, time.Now())
			if !errors.Is(err, ErrInvalid) || fieldOf(err) != tt.field {
				t.Fatalf("err = %v (field %q), want field %q", err, fieldOf(err), tt.field)
			}
		})
	}
}

func TestTestNotification_FindsTheRuleByTypeAndID(t *testing.T) {
	e := newEnv(t, false)
	rule := mustCreate(t, e.reg, subA, schemas.TypeSupplier, RuleInput{URL: "https://hooks.example.com/s", Disabled: true})
	in := TestInput{SupplierID: s("S1")}
	got, n, err := e.reg.TestNotification(t.Context(), subA, schemas.TypeSupplier, rule.ID, in)
	if err != nil || got.ID != rule.ID || n.Type != schemas.TypeSupplier {
		t.Fatalf("a disabled rule can still be tested: %+v %+v %v", got, n, err)
	}
	for _, c := range []struct{ sub, typ, id string }{
		{subA, schemas.TypeSupplier, "other"}, {subB, schemas.TypeSupplier, rule.ID}, {subA, schemas.TypeProduct, rule.ID},
	} {
		if _, _, err := e.reg.TestNotification(t.Context(), c.sub, c.typ, c.id, in); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%+v: %v, want ErrNotFound", c, err)
		}
	}
}

package historysink

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/schemas"
)

// checkFast: when the one-pass reader takes a record, it appends exactly
// the row encoding/json's path (kind.decodeEnvelope) appends.
func checkFast(t *testing.T, value []byte) {
	t.Helper()
	typ := peekType(value)
	fast := newTables()
	if !fast.addRecordFast(value, typ, recordRef{"t", 0, 1}, time.Unix(0, 0)) {
		return
	}
	slow := newTables()
	k, ok := kinds[typ]
	if !ok || !k.decodeEnvelope(slow, value, typ, recordRef{"t", 0, 1}, time.Unix(0, 0)) {
		t.Fatalf("fast path took %q; encoding/json's refuses it", value)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("fast path on %q appended another row than encoding/json's", value)
	}
}

func fastSeeds(t testing.TB) [][]byte {
	at := time.Date(2026, 3, 1, 10, 0, 0, 123000000, time.UTC)
	enc := func(e schemas.Envelope) []byte { b, _ := jsonMarshal(e); return b }
	return [][]byte{
		enc(evNoT(schemas.HistoryAvailabilityChanged, "s/p", at, schemas.AvailabilityChanged{SupplierID: "s", ProductID: "p", RateID: "r",
			Start: at, End: at.Add(time.Hour), OldVacancies: 3, NewVacancies: 2, Source: "push"})),
		enc(evNoT(schemas.HistoryNotificationProduced, "sub", at, schemas.NotificationProduced{DeliveryID: "d", Subscriber: "sub", Type: "availability", EntityKey: "s/p/r", Source: "processors/availability"})),
		enc(evNoT(schemas.HistoryDeliveryAttempt, "sub", at, map[string]any{"deliveryId": "d", "subscriber": "sub", "type": "rate", "entityKey": "s/p/r",
			"attempt": 2, "status": 503, "latencyMs": 4, "outcome": "retry", "error": "subscriber answered 503", "at": at, "nextAttemptAt": at})),
		[]byte(`{"data":{"type":"availability","subscriber":"s","deliveryId":"d"},"time":"2026-03-01T00:00:00Z","type":"notification.produced","id":"x"}`),
		[]byte(`{"id":"x","type":"delivery.attempt","data":{"deliveryId":"d","notification":{"id":"d","payload":{"x":1}},"At":"2026-03-01T00:00:00Z"}}`),
	}
}

func TestFastKinds_TakeTheProducersRecordsAndAgree(t *testing.T) {
	for i, v := range fastSeeds(t) {
		checkFast(t, v)
		if i < 3 && !newTables().addRecordFast(v, peekType(v), recordRef{"t", 0, 1}, time.Unix(0, 0)) {
			t.Errorf("seed %d, a producer's plain record, was not taken by the fast path: %s", i, v)
		}
	}
}

func FuzzFastKinds(f *testing.F) {
	for _, v := range fastSeeds(f) {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, value []byte) { checkFast(t, value) })
}

func evNoT(typ, key string, at time.Time, data any) schemas.Envelope {
	e, _ := schemas.NewHistoryEvent(typ, key, data, at)
	return e
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

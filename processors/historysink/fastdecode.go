package historysink

import (
	"encoding/json"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/jsonwire"
	"github.com/switchbackhq/switchback/schemas"
)

// The three most frequent history records (every change is an
// availability.changed, a notification.produced per subscriber and a
// delivery.attempt per POST) are read without encoding/json's reflection:
// one pass of jsonwire.Reader over the envelope (schemas.ReadEnvelope) and
// its payload. A record
// it does not take (anything unusual) goes the encoding/json way, which
// decides; FuzzFastKinds holds the two equal.

type fastKind func(b *tables, e *event, r *jsonwire.Reader) bool

var fastKinds = map[string]fastKind{
	schemas.HistoryAvailabilityChanged: func(b *tables, e *event, r *jsonwire.Reader) bool {
		var p schemas.AvailabilityChanged
		if !readAvailabilityChanged(r, &p) {
			return false
		}
		return b.addAvailability(e, &p) == nil
	},
	schemas.HistoryNotificationProduced: func(b *tables, e *event, r *jsonwire.Reader) bool {
		var p schemas.NotificationProduced
		if !readNotificationProduced(r, &p) {
			return false
		}
		return b.addNotification(e, &p) == nil
	},
	schemas.HistoryDeliveryAttempt: func(b *tables, e *event, r *jsonwire.Reader) bool {
		var p schemas.DeliveryAttempt
		if !readDeliveryAttempt(r, &p) {
			return false
		}
		return b.addAttempt(e, &p) == nil
	},
}

// addRecordFast is kind.decodeEnvelope by hand: true when the record was
// read and its row appended, false (and nothing appended) otherwise.
func (b *tables) addRecordFast(value []byte, typ string, ref recordRef, recordTime time.Time) bool {
	fk, ok := fastKinds[typ]
	if !ok {
		return false
	}
	env, ok := schemas.ReadEnvelope(value)
	if !ok || env.Type != typ || len(env.Data) == 0 || env.Data[0] != '{' {
		return false
	}
	// The payload is read into a scratch event first: a payload the
	// reader does not take must append nothing.
	e := newEvent(env.ID, env.Type, env.Key, env.Source, env.Time, ref, recordTime)
	d := jsonwire.NewReader(env.Data)
	return fk(b, &e, d)
}

// Each reader below takes a payload object whose keys encoding/json would
// map to the type's fields exactly; a key it folds (other case) or a
// value of another shape stops it. Unknown keys are skipped, as
// encoding/json ignores them. The payload must be read whole before the
// row is appended (the add functions append unconditionally).

func readAvailabilityChanged(r *jsonwire.Reader, p *schemas.AvailabilityChanged) bool {
	return r.Object(func(k []byte) bool {
		switch string(k) {
		case "supplierId":
			p.SupplierID, _ = r.Str()
		case "productId":
			p.ProductID, _ = r.Str()
		case "rateId":
			p.RateID, _ = r.Str()
		case "start":
			p.Start = r.Time()
		case "end":
			p.End = r.Time()
		case "oldVacancies":
			p.OldVacancies = int(r.Int())
		case "newVacancies":
			p.NewVacancies = int(r.Int())
		case "oldStatus":
			p.OldStatus, _ = r.Str()
		case "newStatus":
			p.NewStatus, _ = r.Str()
		case "source":
			p.Source, _ = r.Str()
		default:
			return r.Unknown(k, "supplierId", "productId", "rateId", "start", "end", "oldVacancies", "newVacancies", "oldStatus", "newStatus", "source")
		}
		return r.OK()
	}) && r.End()
}

func readNotificationProduced(r *jsonwire.Reader, p *schemas.NotificationProduced) bool {
	return r.Object(func(k []byte) bool {
		switch string(k) {
		case "deliveryId":
			p.DeliveryID, _ = r.Str()
		case "subscriber":
			p.Subscriber, _ = r.Str()
		case "type":
			p.Type, _ = r.Str()
		case "entityKey":
			p.EntityKey, _ = r.Str()
		case "ruleId":
			p.RuleID, _ = r.Str()
		case "source":
			p.Source, _ = r.Str()
		default:
			return r.Unknown(k, "deliveryId", "subscriber", "type", "entityKey", "ruleId", "source")
		}
		return r.OK()
	}) && r.End()
}

func readDeliveryAttempt(r *jsonwire.Reader, p *schemas.DeliveryAttempt) bool {
	return r.Object(func(k []byte) bool {
		switch string(k) {
		case "deliveryId":
			p.DeliveryID, _ = r.Str()
		case "subscriber":
			p.Subscriber, _ = r.Str()
		case "type":
			p.Type, _ = r.Str()
		case "attempt":
			p.Attempt = int(r.Int())
		case "status":
			p.Status = int(r.Int())
		case "latencyMs":
			p.LatencyMs = r.Int()
		case "outcome":
			p.Outcome, _ = r.Str()
		case "error":
			p.Error, _ = r.Str()
		case "at":
			p.At = r.Time()
		case "notification":
			if p.Notification != nil {
				return false
			}
			p.Notification = append(json.RawMessage(nil), r.Raw()...)
		default:
			return r.Unknown(k, "deliveryId", "subscriber", "type", "attempt", "status", "latencyMs", "outcome", "error", "at", "notification")
		}
		return r.OK()
	}) && r.End()
}

package dispatcher

import (
	"encoding/json"

	"github.com/switchbackhq/switchback/internal/platform/jsonwire"
	"github.com/switchbackhq/switchback/schemas"
)

// decodeScheduled reads a pending delivery as Redis holds it (what
// encodeScheduled wrote) in one pass; anything the fast reader does not
// take goes through encoding/json (FuzzDecodeScheduled holds the two
// equal).
func decodeScheduled(raw []byte) (schemas.ScheduledDelivery, error) {
	if s, ok := decodeScheduledFast(raw); ok {
		return s, nil
	}
	var s schemas.ScheduledDelivery
	err := json.Unmarshal(raw, &s)
	return s, err
}

func decodeScheduledFast(raw []byte) (schemas.ScheduledDelivery, bool) {
	r := jsonwire.NewReader(raw)
	var s schemas.ScheduledDelivery
	seenN := false
	ok := r.Object(func(key []byte) bool {
		switch string(key) {
		case "notification":
			if seenN {
				return false // repeated: encoding/json merges; leave it to it
			}
			seenN = true
			return readNotification(r, &s.Notification)
		case "attempt":
			s.Attempt = int(r.Int())
		case "at":
			s.At = r.Time()
		default:
			return r.Unknown(key, "notification", "attempt", "at")
		}
		return r.OK()
	})
	if !ok || !r.End() {
		return schemas.ScheduledDelivery{}, false
	}
	return s, true
}

// decodeEnvelopeFast reads an Envelope of type "notification" (what
// schemas.NewNotificationEvent makes: the processors' records, replays) in
// one pass, its data read as readNotification does; the envelope's other
// keys are skipped. A bare notification is refused at its "type" (not
// "notification"). Anything unusual (a key spelled in another case, a
// repeated type or data, data not an object) is left to encoding/json
// (FuzzDecodeNotification holds the two equal).
func decodeEnvelopeFast(value []byte) (schemas.Notification, bool) {
	r := jsonwire.NewReader(value)
	var n schemas.Notification
	var seenType, seenData bool
	ok := r.Object(func(key []byte) bool {
		switch string(key) {
		case "type":
			typ, ok := r.Str()
			if seenType || !ok || typ != schemas.EventNotification {
				return false
			}
			seenType = true
		case "data":
			if seenData || r.Peek() != '{' {
				return false
			}
			seenData = true
			return readNotification(r, &n)
		default:
			return r.Unknown(key, "type", "data")
		}
		return r.OK()
	})
	if !ok || !r.End() || !seenType || !seenData {
		return schemas.Notification{}, false
	}
	return n, true
}

func readNotification(r *jsonwire.Reader, n *schemas.Notification) bool {
	return r.Object(func(key []byte) bool {
		switch string(key) {
		case "id":
			n.ID, _ = r.Str()
		case "subscriber":
			n.Subscriber, _ = r.Str()
		case "type":
			n.Type, _ = r.Str()
		case "entityKey":
			n.EntityKey, _ = r.Str()
		case "supplier":
			n.Supplier, _ = r.Str()
		case "payload":
			if n.Payload != nil {
				return false
			}
			p := r.Raw()
			n.Payload = append(json.RawMessage(nil), p...)
		case "createdAt":
			n.CreatedAt = r.Time()
		case "source":
			n.Source, _ = r.Str()
		default:
			return r.Unknown(key, "id", "subscriber", "type", "entityKey", "supplier", "payload", "createdAt", "source")
		}
		return r.OK()
	})
}

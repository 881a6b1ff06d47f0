package dispatcher

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/switchbackhq/switchback/internal/platform/jsonwire"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// The dispatcher writes two to three records per delivery (the schedule,
// the attempt in history, the outcome on the deliveries topic), and
// encoding/json's reflection was a large part of its CPU at thousands of
// deliveries a second. These encoders write the same bytes by hand (see
// TestEncode_MatchesEncodingJSON and FuzzEncodeRecords); a value they
// cannot write exactly (a time encoding/json refuses, a payload that is not
// compact JSON) goes through encoding/json instead.

// fastMessage is envelopeMessage for the dispatcher's own records, with
// data written by enc; ok is false when enc could not.
func fastMessage(topic, typ, key string, at time.Time, enc func([]byte) ([]byte, bool)) (stream.Message, bool) {
	b := make([]byte, 0, 512)
	b = append(b, `{"id":`...)
	b = jsonwire.AppendString(b, uuid.NewString())
	b = append(b, `,"type":`...)
	b = jsonwire.AppendString(b, typ)
	b = append(b, `,"key":`...)
	b = jsonwire.AppendString(b, key)
	b = append(b, `,"time":`...)
	b, ok := jsonwire.AppendTime(b, at.UTC().Truncate(envelopeTimePrecision))
	if !ok {
		return stream.Message{}, false
	}
	b = append(b, `,"source":"`+sourceDispatcher+`","data":`...)
	if b, ok = enc(b); !ok {
		return stream.Message{}, false
	}
	b = append(b, '}')
	return stream.Message{Topic: topic, Key: []byte(key), Value: b}, true
}

// recordMessage is the record of data as an envelope on topic: by hand
// when it can be, else through encoding/json.
func recordMessage(topic, typ, key string, at time.Time, data any) (stream.Message, error) {
	if m, ok := fastMessage(topic, typ, key, at, func(b []byte) ([]byte, bool) { return appendRecord(b, data) }); ok {
		return m, nil
	}
	return envelopeMessage(topic, typ, key, "", at, data)
}

// appendRecord writes one of the dispatcher's records.
func appendRecord(b []byte, data any) ([]byte, bool) {
	switch r := data.(type) {
	case schemas.ScheduledDelivery:
		return appendScheduled(b, r)
	case schemas.DoneDelivery:
		return appendDone(b, r)
	case schemas.DeliveryAttemptRecord:
		return appendAttempt(b, r)
	case schemas.NotificationSuppressedRecord:
		return appendSuppressed(b, r)
	}
	return b, false
}

// compact reports whether raw is written by encoding/json as it is (a
// json.RawMessage is compacted and HTML-escaped; jsonwire.RawAsIs).
// Payloads come compact from their producers; one with whitespace, <, >,
// & or U+2028/U+2029 anywhere takes the slow path. The payload was cut
// out of the record by decode.go, which does not validate it: json.Valid
// does.
func compact(raw []byte) bool {
	return len(raw) > 0 && jsonwire.RawAsIs(raw) && json.Valid(raw)
}

func appendNotification(b []byte, n schemas.Notification) ([]byte, bool) {
	if !compact(n.Payload) {
		return b, false
	}
	b = append(b, `{"id":`...)
	b = jsonwire.AppendString(b, n.ID)
	b = append(b, `,"subscriber":`...)
	b = jsonwire.AppendString(b, n.Subscriber)
	b = append(b, `,"type":`...)
	b = jsonwire.AppendString(b, n.Type)
	b = append(b, `,"entityKey":`...)
	b = jsonwire.AppendString(b, n.EntityKey)
	if n.Supplier != "" {
		b = append(b, `,"supplier":`...)
		b = jsonwire.AppendString(b, n.Supplier)
	}
	b = append(b, `,"payload":`...)
	b = append(b, n.Payload...)
	b = append(b, `,"createdAt":`...)
	b, ok := jsonwire.AppendTime(b, n.CreatedAt)
	if !ok {
		return b, false
	}
	if n.Source != "" {
		b = append(b, `,"source":`...)
		b = jsonwire.AppendString(b, n.Source)
	}
	return append(b, '}'), true
}

func appendScheduled(b []byte, r schemas.ScheduledDelivery) ([]byte, bool) {
	b = append(b, `{"notification":`...)
	b, ok := appendNotification(b, r.Notification)
	if !ok {
		return b, false
	}
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(r.Attempt), 10)
	b = append(b, `,"at":`...)
	if b, ok = jsonwire.AppendTime(b, r.At); !ok {
		return b, false
	}
	return append(b, '}'), true
}

func appendDone(b []byte, d schemas.DoneDelivery) ([]byte, bool) {
	b = append(b, `{"deliveryId":`...)
	b = jsonwire.AppendString(b, d.DeliveryID)
	if d.Subscriber != "" {
		b = append(b, `,"subscriber":`...)
		b = jsonwire.AppendString(b, d.Subscriber)
	}
	b = append(b, `,"outcome":`...)
	b = jsonwire.AppendString(b, d.Outcome)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(d.Attempt), 10)
	b = append(b, `,"at":`...)
	b, ok := jsonwire.AppendTime(b, d.At)
	if !ok {
		return b, false
	}
	return append(b, '}'), true
}

func appendAttempt(b []byte, a schemas.DeliveryAttemptRecord) ([]byte, bool) {
	b = append(b, `{"deliveryId":`...)
	b = jsonwire.AppendString(b, a.DeliveryID)
	b = append(b, `,"subscriber":`...)
	b = jsonwire.AppendString(b, a.Subscriber)
	b = append(b, `,"type":`...)
	b = jsonwire.AppendString(b, a.Type)
	if a.EntityKey != "" {
		b = append(b, `,"entityKey":`...)
		b = jsonwire.AppendString(b, a.EntityKey)
	}
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(a.Attempt), 10)
	if a.Status != 0 {
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(a.Status), 10)
	}
	b = append(b, `,"latencyMs":`...)
	b = strconv.AppendInt(b, a.LatencyMs, 10)
	b = append(b, `,"outcome":`...)
	b = jsonwire.AppendString(b, a.Outcome)
	if a.Error != "" {
		b = append(b, `,"error":`...)
		b = jsonwire.AppendString(b, a.Error)
	}
	b = append(b, `,"at":`...)
	b, ok := jsonwire.AppendTime(b, a.At)
	if !ok {
		return b, false
	}
	if a.NextAttemptAt != nil {
		b = append(b, `,"nextAttemptAt":`...)
		if b, ok = jsonwire.AppendTime(b, *a.NextAttemptAt); !ok {
			return b, false
		}
	}
	if a.Notification != nil {
		b = append(b, `,"notification":`...)
		if b, ok = appendNotification(b, *a.Notification); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

func appendSuppressed(b []byte, r schemas.NotificationSuppressedRecord) ([]byte, bool) {
	b = append(b, `{"deliveryId":`...)
	b = jsonwire.AppendString(b, r.DeliveryID)
	b = append(b, `,"subscriber":`...)
	b = jsonwire.AppendString(b, r.Subscriber)
	b = append(b, `,"type":`...)
	b = jsonwire.AppendString(b, r.Type)
	if r.EntityKey != "" {
		b = append(b, `,"entityKey":`...)
		b = jsonwire.AppendString(b, r.EntityKey)
	}
	b = append(b, `,"reason":`...)
	b = jsonwire.AppendString(b, r.Reason)
	b = append(b, `,"at":`...)
	b, ok := jsonwire.AppendTime(b, r.At)
	if !ok {
		return b, false
	}
	b = append(b, `,"notification":`...)
	if b, ok = appendNotification(b, r.Notification); !ok {
		return b, false
	}
	return append(b, '}'), true
}

// encodeScheduled is a pending delivery as Redis holds it.
func encodeScheduled(r schemas.ScheduledDelivery) ([]byte, error) {
	if b, ok := appendScheduled(make([]byte, 0, 384), r); ok {
		return b, nil
	}
	return json.Marshal(r)
}

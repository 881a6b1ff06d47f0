package availchange

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/switchbackhq/switchback/internal/platform/jsonwire"
	"github.com/switchbackhq/switchback/schemas"
)

// The processor's three outgoing records (availability.changed,
// the notification's envelope, notification.produced) are written by hand when every
// string in them needs no JSON escaping (ids, keys and sources always do
// not), byte for byte what encoding/json writes for the schemas types:
// reflection, the re-compaction of the nested data and a crypto/rand id
// that schemas.NewHistoryEvent draws and we overwrite were a quarter of
// the processor's CPU. TestWire_MatchesEncodingJSON holds the two equal;
// anything unusual goes through encoding/json.

// plain reports whether encoding/json writes s as is between quotes.
func plain(ss ...string) bool {
	for _, s := range ss {
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c < 0x20, c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
				return false
			}
		}
	}
	return true
}

// plainTime reports whether encoding/json writes t as RFC 3339 with
// nanoseconds (it refuses years outside 0-9999 and odd offsets).
func plainTime(ts ...time.Time) bool {
	for _, t := range ts {
		if y := t.Year(); y < 0 || y > 9999 {
			return false
		}
		if _, off := t.Zone(); off%60 != 0 || off <= -24*3600 || off >= 24*3600 {
			return false
		}
	}
	return true
}

func appendStr(b []byte, key, s string) []byte {
	b = append(b, key...)
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendTime(b []byte, key string, t time.Time) []byte {
	b = append(b, key...)
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

func historyID(eventID string, c Change) string {
	return uuid.NewSHA1(namespace, fmt.Appendf(nil, "%s\x00history\x00%d\x00%d", eventID, c.Start.UnixNano(), c.End.UnixNano())).String()
}

// historyValue is the availability.changed event of a change.
func historyValue(in input, c Change, at time.Time) ([]byte, error) {
	at = at.UTC()
	if plain(in.env.ID, in.sid, in.pid, in.rid, in.source) && plainTime(at, c.Start, c.End) && !at.IsZero() {
		b := make([]byte, 0, 320+2*len(in.sid)+2*len(in.pid)+len(in.rid))
		b = appendStr(b, `{"id":`, historyID(in.env.ID, c))
		b = appendStr(b, `,"type":`, schemas.HistoryAvailabilityChanged)
		b = appendStr(b, `,"key":`, in.sid+"/"+in.pid)
		b = appendTime(b, `,"time":`, at)
		b = appendStr(b, `,"source":`, Source)
		b = appendStr(b, `,"data":{"supplierId":`, in.sid)
		b = appendStr(b, `,"productId":`, in.pid)
		b = appendStr(b, `,"rateId":`, in.rid)
		b = appendTime(b, `,"start":`, c.Start)
		b = appendTime(b, `,"end":`, c.End)
		b = append(b, `,"oldVacancies":`...)
		b = strconv.AppendInt(b, int64(c.Old), 10)
		b = append(b, `,"newVacancies":`...)
		b = strconv.AppendInt(b, int64(c.New), 10)
		b = appendStr(b, `,"source":`, in.source)
		return append(b, "}}"...), nil
	}
	return historyValueJSON(in, c, at)
}

func historyValueJSON(in input, c Change, at time.Time) ([]byte, error) {
	env, err := schemas.NewHistoryEvent(schemas.HistoryAvailabilityChanged, in.sid+"/"+in.pid, schemas.AvailabilityChanged{
		SupplierID: in.sid, ProductID: in.pid, RateID: in.rid, Start: c.Start, End: c.End,
		OldVacancies: c.Old, NewVacancies: c.New, Source: in.source}, at)
	if err != nil {
		return nil, err
	}
	env.ID = historyID(in.env.ID, c)
	env.Source = Source
	return json.Marshal(env)
}

// notificationValues are a notification's TopicNotifications record (the
// envelope of schemas.NewNotificationEvent: its id the notification's, so a
// redone event writes the same bytes) and its notification.produced event.
// n.Payload must be set. The record is one buffer sized up front: no
// allocation more than the bare notification took.
func notificationValues(n schemas.Notification) (note, produced []byte, err error) {
	// The payload is availabilityPayload's, valid JSON by construction;
	// RawAsIs checks that encoding/json would not rewrite it.
	if !plain(n.ID, n.Subscriber, n.Type, n.EntityKey, n.Supplier, n.Source) || !plainTime(n.CreatedAt) || n.CreatedAt.IsZero() ||
		n.ID == "" || n.Subscriber == "" || n.Type == "" || len(n.Payload) == 0 || !jsonwire.RawAsIs(n.Payload) {
		return notificationValuesJSON(n)
	}
	note = appendNotificationEvent(make([]byte, 0, notificationEventCap(n)), n)
	produced = make([]byte, 0, 260+len(n.Subscriber)*2+len(n.EntityKey))
	produced = appendStr(produced, `{"id":`, schemas.ProducedID(n.ID))
	produced = appendStr(produced, `,"type":`, schemas.HistoryNotificationProduced)
	produced = appendStr(produced, `,"key":`, n.Subscriber)
	produced = appendTime(produced, `,"time":`, n.CreatedAt.UTC())
	if n.Source != "" {
		produced = appendStr(produced, `,"source":`, n.Source)
	}
	produced = appendStr(produced, `,"data":{"deliveryId":`, n.ID)
	produced = appendStr(produced, `,"subscriber":`, n.Subscriber)
	produced = appendStr(produced, `,"type":`, n.Type)
	produced = appendStr(produced, `,"entityKey":`, n.EntityKey)
	if n.Source != "" {
		produced = appendStr(produced, `,"source":`, n.Source)
	}
	return note, append(produced, "}}"...), nil
}

// notificationEventCap bounds the length of n's envelope as
// appendNotificationEvent writes it: 172 bytes of keys, quotes and braces,
// two times of at most 35 bytes (RFC 3339 with nanoseconds and an offset),
// and the strings, some twice.
func notificationEventCap(n schemas.Notification) int {
	return 256 + 2*len(n.ID) + 2*len(n.Subscriber) + len(n.Type) + len(n.EntityKey) + len(n.Supplier) + len(n.Payload) + 2*len(n.Source)
}

// appendNotificationEvent appends what encoding/json writes for
// schemas.NewNotificationEvent(n), for a notification whose strings are
// plain and whose time is plainTime and not zero.
func appendNotificationEvent(b []byte, n schemas.Notification) []byte {
	b = appendStr(b, `{"id":`, n.ID)
	b = appendStr(b, `,"type":`, schemas.EventNotification)
	b = appendStr(b, `,"key":`, n.Subscriber)
	b = appendTime(b, `,"time":`, n.CreatedAt.UTC())
	if n.Source != "" {
		b = appendStr(b, `,"source":`, n.Source)
	}
	b = appendStr(b, `,"data":{"id":`, n.ID)
	b = appendStr(b, `,"subscriber":`, n.Subscriber)
	b = appendStr(b, `,"type":`, n.Type)
	b = appendStr(b, `,"entityKey":`, n.EntityKey)
	if n.Supplier != "" {
		b = appendStr(b, `,"supplier":`, n.Supplier)
	}
	b = append(b, `,"payload":`...)
	b = append(b, n.Payload...)
	b = appendTime(b, `,"createdAt":`, n.CreatedAt)
	if n.Source != "" {
		b = appendStr(b, `,"source":`, n.Source)
	}
	return append(b, "}}"...)
}

func notificationValuesJSON(n schemas.Notification) (note, produced []byte, err error) {
	env, err := schemas.NewNotificationEvent(n)
	if err != nil {
		return nil, nil, err
	}
	if note, err = json.Marshal(env); err != nil {
		return nil, nil, err
	}
	h, err := schemas.ProducedEvent(n)
	if err != nil {
		return nil, nil, err
	}
	if produced, err = json.Marshal(h); err != nil {
		return nil, nil, err
	}
	return note, produced, nil
}

// availabilityPayload is the webhook payload of a range (spec doc 1).
func availabilityPayload(sid, pid, rid string, s Span) (json.RawMessage, error) {
	start, end := s.From.UTC(), s.To.UTC()
	if plain(sid, pid, rid) && plainTime(start, end) {
		b := make([]byte, 0, 120+len(sid)+len(pid)+len(rid))
		b = appendStr(b, `{"supplierID":`, sid)
		b = appendStr(b, `,"productID":`, pid)
		b = appendStr(b, `,"rateID":`, rid)
		b = append(b, `,"start":"`...)
		b = start.AppendFormat(b, time.RFC3339)
		b = append(b, `","end":"`...)
		b = end.AppendFormat(b, time.RFC3339)
		return append(b, `"}`...), nil
	}
	return availabilityPayloadJSON(sid, pid, rid, s)
}

func availabilityPayloadJSON(sid, pid, rid string, s Span) (json.RawMessage, error) {
	return json.Marshal(schemas.AvailabilityPayload{SupplierID: sid, ProductID: pid, RateID: rid,
		Start: s.From.UTC().Format(time.RFC3339), End: s.To.UTC().Format(time.RFC3339)})
}

package historysink

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/shopspring/decimal"

	"github.com/switchbackhq/switchback/schemas"
)

// Table names (schemas/clickhouse/0001 and 0002).
const (
	TableEvents         = "history_events"
	TableAvailability   = "history_availability_changes"
	TablePrices         = "history_price_changes"
	TableNotifications  = "history_notifications"
	TableDeliveries     = "history_deliveries"
	TableBookings       = "history_bookings"
	TableChangeRequests = "history_change_requests"
	TableSyncReports    = "history_sync_reports"
	TablePartnerCalls   = "history_partner_calls"
)

// Tables lists every table the sink writes, which is also what retention
// drops partitions of.
func Tables() []string {
	return []string{TableEvents, TableAvailability, TablePrices, TableNotifications, TableDeliveries,
		TableBookings, TableChangeRequests, TableSyncReports, TablePartnerCalls}
}

// TypeInvalidEnvelope is the history_events.type of a record that was not a
// JSON envelope at all: it is kept (payload = the raw record) rather than
// dropped, so that a producer bug can be seen and repaired.
const TypeInvalidEnvelope = "_invalid_envelope"

// Why a record went to history_events: the unrouted metric's reason label.
const (
	reasonUnknownType     = "unknown_type"
	reasonBadPayload      = "bad_payload"
	reasonInvalidEnvelope = "invalid_envelope"
)

// column buffers one column of a table between flushes. send hands the
// whole column to the driver in one call (columnar append: far cheaper than
// Append per row).
type column interface {
	send(driver.BatchColumn) error
	reset()
	length() int
}

type col[T any] struct{ v []T }

func (c *col[T]) add(x T)                          { c.v = append(c.v, x) }
func (c *col[T]) send(bc driver.BatchColumn) error { return bc.Append(c.v) }
func (c *col[T]) length() int                      { return len(c.v) }
func (c *col[T]) reset() {
	clear(c.v) // let strings be collected
	c.v = c.v[:0]
}

type namedColumn struct {
	name string
	col  column
}

// rows is the part every table shares: the event id (dedup key) and when
// the event happened.
type rows struct {
	eventID    col[string]
	occurredAt col[time.Time]
	occurredMs col[int64]
}

func (r *rows) addCommon(e *event) {
	r.eventID.add(e.id)
	r.occurredAt.add(e.at)
	r.occurredMs.add(e.at.UnixMilli())
}

func (r *rows) common() []namedColumn {
	return []namedColumn{{"event_id", &r.eventID}, {"occurred_at", &r.occurredAt}, {"occurred_ms", &r.occurredMs}}
}

// table is one ClickHouse table's buffered rows.
type table struct {
	name   string
	insert string // INSERT INTO name (columns...), the explicit list 18.16 needs
	cols   []namedColumn
	n      int
}

func newTable(name string, cols []namedColumn) *table {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	return &table{name: name, cols: cols, insert: "INSERT INTO " + name + " (" + strings.Join(names, ", ") + ")"}
}

func (t *table) reset() {
	for _, c := range t.cols {
		c.col.reset()
	}
	t.n = 0
}

// event is the decoded envelope of one record.
type event struct {
	id  string
	typ string
	key string
	at  time.Time // UTC
	src string
}

// tables holds one batch's rows, by table. It is not safe for concurrent
// use: the fetch loop fills one while the writer inserts another.
type tables struct {
	all []*table

	generic struct {
		rows
		typ, key, source, payload col[string]
	}
	avail struct {
		rows
		supplier, product, rate    col[string]
		start, end                 col[time.Time]
		oldVac, newVac             col[int32]
		oldStatus, newStatus, from col[string]
	}
	price struct {
		rows
		supplier, product, rate, price col[string]
		start, end                     col[time.Time]
		currency                       col[string]
		oldRetail, newRetail           col[decimal.Decimal]
		oldNet, newNet                 col[decimal.Decimal]
		from                           col[string]
	}
	notif struct {
		rows
		delivery, subscriber, typ, entity, rule, from col[string]
	}
	deliv struct {
		rows
		delivery, subscriber, typ col[string]
		attempt, status           col[uint16]
		latency                   col[uint32]
		outcome, errText, notif   col[string]
	}
	book struct {
		rows
		kind, booking, hold, channel, supplier, product, rate col[string]
		status, prevStatus, reference                         col[string]
		quantity                                              col[uint32]
		startTime, expiresAt                                  col[*time.Time]
	}
	change struct {
		rows
		request, supplier, product, mode, status col[string]
		inserted                                 col[time.Time]
		began, finished                          col[*time.Time]
		errText                                  col[string]
	}
	syncr struct {
		rows
		report            col[int64]
		system, supplier  col[string]
		inserted          col[time.Time]
		errorCount, items col[uint32]
		errorReport       col[string]
	}
	partner struct {
		rows
		system, supplier, operation col[string]
		status                      col[uint16]
		latency                     col[uint32]
		outcome, errText            col[string]
	}

	tGeneric, tAvail, tPrice, tNotif, tDeliv, tBook, tChange, tSync, tPartner *table
}

func newTables() *tables {
	b := &tables{}
	g := &b.generic
	b.tGeneric = newTable(TableEvents, []namedColumn{{"event_id", &g.eventID}, {"type", &g.typ}, {"key", &g.key},
		{"occurred_at", &g.occurredAt}, {"occurred_ms", &g.occurredMs}, {"source", &g.source}, {"payload", &g.payload}})
	a := &b.avail
	b.tAvail = newTable(TableAvailability, append(a.common(),
		namedColumn{"supplier_id", &a.supplier}, namedColumn{"product_id", &a.product}, namedColumn{"rate_id", &a.rate},
		namedColumn{"window_start", &a.start}, namedColumn{"window_end", &a.end},
		namedColumn{"old_vacancies", &a.oldVac}, namedColumn{"new_vacancies", &a.newVac},
		namedColumn{"old_status", &a.oldStatus}, namedColumn{"new_status", &a.newStatus}, namedColumn{"source", &a.from}))
	p := &b.price
	b.tPrice = newTable(TablePrices, append(p.common(),
		namedColumn{"supplier_id", &p.supplier}, namedColumn{"product_id", &p.product}, namedColumn{"rate_id", &p.rate},
		namedColumn{"price_id", &p.price}, namedColumn{"window_start", &p.start}, namedColumn{"window_end", &p.end},
		namedColumn{"currency", &p.currency}, namedColumn{"old_retail", &p.oldRetail}, namedColumn{"new_retail", &p.newRetail},
		namedColumn{"old_net", &p.oldNet}, namedColumn{"new_net", &p.newNet}, namedColumn{"source", &p.from}))
	n := &b.notif
	b.tNotif = newTable(TableNotifications, append(n.common(),
		namedColumn{"delivery_id", &n.delivery}, namedColumn{"subscriber", &n.subscriber}, namedColumn{"type", &n.typ},
		namedColumn{"entity_key", &n.entity}, namedColumn{"rule_id", &n.rule}, namedColumn{"source", &n.from}))
	d := &b.deliv
	b.tDeliv = newTable(TableDeliveries, append(d.common(),
		namedColumn{"delivery_id", &d.delivery}, namedColumn{"subscriber", &d.subscriber}, namedColumn{"type", &d.typ},
		namedColumn{"attempt", &d.attempt}, namedColumn{"status", &d.status}, namedColumn{"latency_ms", &d.latency},
		namedColumn{"outcome", &d.outcome}, namedColumn{"error", &d.errText}, namedColumn{"notification", &d.notif}))
	k := &b.book
	b.tBook = newTable(TableBookings, append(k.common(),
		namedColumn{"kind", &k.kind}, namedColumn{"booking_id", &k.booking}, namedColumn{"hold_id", &k.hold},
		namedColumn{"channel_id", &k.channel}, namedColumn{"supplier_id", &k.supplier}, namedColumn{"product_id", &k.product},
		namedColumn{"rate_id", &k.rate}, namedColumn{"status", &k.status}, namedColumn{"previous_status", &k.prevStatus},
		namedColumn{"reseller_reference", &k.reference}, namedColumn{"quantity", &k.quantity},
		namedColumn{"start_time", &k.startTime}, namedColumn{"expires_at", &k.expiresAt}))
	c := &b.change
	b.tChange = newTable(TableChangeRequests, append(c.common(),
		namedColumn{"request_id", &c.request}, namedColumn{"supplier_id", &c.supplier}, namedColumn{"product_id", &c.product},
		namedColumn{"mode", &c.mode}, namedColumn{"status", &c.status}, namedColumn{"inserted_at", &c.inserted},
		namedColumn{"began_at", &c.began}, namedColumn{"finished_at", &c.finished}, namedColumn{"error", &c.errText}))
	s := &b.syncr
	b.tSync = newTable(TableSyncReports, append(s.common(),
		namedColumn{"report_id", &s.report}, namedColumn{"external_system_id", &s.system}, namedColumn{"supplier_id", &s.supplier},
		namedColumn{"inserted_at", &s.inserted}, namedColumn{"error_count", &s.errorCount}, namedColumn{"items", &s.items},
		namedColumn{"error_report", &s.errorReport}))
	pc := &b.partner
	b.tPartner = newTable(TablePartnerCalls, append(pc.common(),
		namedColumn{"system", &pc.system}, namedColumn{"supplier_id", &pc.supplier}, namedColumn{"operation", &pc.operation},
		namedColumn{"status", &pc.status}, namedColumn{"latency_ms", &pc.latency}, namedColumn{"outcome", &pc.outcome},
		namedColumn{"error", &pc.errText}))
	b.all = []*table{b.tGeneric, b.tAvail, b.tPrice, b.tNotif, b.tDeliv, b.tBook, b.tChange, b.tSync, b.tPartner}
	return b
}

func (b *tables) reset() {
	for _, t := range b.all {
		t.reset()
	}
}

// addRecord decodes one record of the history topic and appends it to its
// table. Nothing is ever dropped: a record that is not an envelope, an
// unknown type, or a payload that does not decode lands in history_events
// with its raw JSON; unrouted names the reason ("" when routed).
// ref identifies the record itself (topic/partition/offset): the event id
// of an envelope without one, so that a replay still collapses.
func (b *tables) addRecord(value []byte, ref recordRef, recordTime time.Time) (unrouted string) {
	// Fast path, one decoding pass: the type is read ahead from the raw
	// bytes and the whole envelope decoded with its typed payload. JSON
	// decoding is most of the sink's CPU, and the two-step path (envelope,
	// then payload) scans the payload four times. Any surprise (another
	// field order, a payload of the wrong shape) falls through to the
	// two-step path, which decides.
	if typ := peekType(value); typ != "" {
		if b.addRecordFast(value, typ, ref, recordTime) {
			return ""
		}
		if k, ok := kinds[typ]; ok && k.decodeEnvelope(b, value, typ, ref, recordTime) {
			return ""
		}
	}
	var env schemas.Envelope
	if err := json.Unmarshal(value, &env); err != nil {
		b.addGeneric(&event{id: ref.id(), typ: TypeInvalidEnvelope, at: utc(recordTime)}, value)
		return reasonInvalidEnvelope
	}
	e := newEvent(env.ID, env.Type, env.Key, env.Source, env.Time, ref, recordTime)
	k, ok := kinds[e.typ]
	if !ok {
		b.addGeneric(&e, env.Data)
		if genericByDesign[e.typ] {
			return ""
		}
		return reasonUnknownType
	}
	if err := k.decodeData(b, &e, env.Data); err != nil {
		b.addGeneric(&e, env.Data)
		return reasonBadPayload
	}
	return ""
}

// recordRef is where a record sits on the topic.
type recordRef struct {
	topic     string
	partition int
	offset    int64
}

// id names a record by its coordinates: the event id of a record that has
// none, stable across replays of the same record.
func (r recordRef) id() string {
	return "kafka:" + r.topic + "/" + strconv.Itoa(r.partition) + "/" + strconv.FormatInt(r.offset, 10)
}

// newEvent fills in what an envelope lacks: the record's coordinates for
// its id, the record's time for its time.
func newEvent(id, typ, key, source string, at time.Time, ref recordRef, recordTime time.Time) event {
	if id == "" {
		id = ref.id()
	}
	if at.IsZero() {
		at = recordTime
	}
	return event{id: id, typ: typ, key: key, at: utc(at), src: source}
}

// typeField is how encoding/json writes Envelope.Type; Envelope's field
// order puts it before data.
var typeField = []byte(`"type":"`)

// peekType returns the value of the first "type" member of a record, or ""
// when there is none in the plain form encoding/json writes.
func peekType(value []byte) string {
	i := bytes.Index(value, typeField)
	if i < 0 {
		return ""
	}
	rest := value[i+len(typeField):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 || bytes.IndexByte(rest[:j], '\\') >= 0 {
		return ""
	}
	return string(rest[:j])
}

// router decodes one history type, in one pass (decodeEnvelope, false when
// the record is not what the peeked type promised) or from an envelope's
// data (decodeData), and appends its row.
type router interface {
	decodeEnvelope(b *tables, value []byte, typ string, ref recordRef, recordTime time.Time) bool
	decodeData(b *tables, e *event, data json.RawMessage) error
}

// kind is the router of payload type T; add appends the row (and must
// append nothing when it fails).
type kind[T any] struct {
	add func(b *tables, e *event, p *T) error
}

func (k kind[T]) decodeEnvelope(b *tables, value []byte, typ string, ref recordRef, recordTime time.Time) bool {
	var env struct {
		ID     string    `json:"id"`
		Type   string    `json:"type"`
		Key    string    `json:"key"`
		Time   time.Time `json:"time"`
		Source string    `json:"source"`
		Data   *T        `json:"data"`
	}
	if err := json.Unmarshal(value, &env); err != nil || env.Type != typ || env.Data == nil {
		return false
	}
	e := newEvent(env.ID, env.Type, env.Key, env.Source, env.Time, ref, recordTime)
	return k.add(b, &e, env.Data) == nil
}

func (k kind[T]) decodeData(b *tables, e *event, data json.RawMessage) error {
	var p T
	if err := decode(data, &p); err != nil {
		return err
	}
	return k.add(b, e, &p)
}

// kinds routes every history type to its table.
var kinds = map[string]router{
	schemas.HistoryAvailabilityChanged:    kind[schemas.AvailabilityChanged]{(*tables).addAvailability},
	schemas.HistoryPriceChanged:           kind[schemas.PriceChanged]{(*tables).addPrice},
	schemas.HistoryNotificationProduced:   kind[schemas.NotificationProduced]{(*tables).addNotification},
	schemas.HistoryDeliveryAttempt:        kind[schemas.DeliveryAttempt]{(*tables).addAttempt},
	schemas.HistoryNotificationSuppressed: kind[schemas.NotificationSuppressed]{(*tables).addSuppressed},
	schemas.HistoryHoldStatus:             kind[schemas.HoldStatusChanged]{(*tables).addHold},
	schemas.HistoryBookingStatus:          kind[schemas.BookingStatusChanged]{(*tables).addBookingStatus},
	schemas.HistoryChangeRequestRun:       kind[schemas.ChangeRequestRun]{(*tables).addChangeRequest},
	schemas.HistorySyncReport:             kind[schemas.SyncReport]{(*tables).addSyncReport},
	schemas.HistoryPartnerCall:            kind[schemas.PartnerCall]{(*tables).addPartnerCall},
}

// genericByDesign are known types that have no table of their own: they
// are stored in history_events without counting as unrouted.
var genericByDesign = map[string]bool{schemas.HistorySubscriberAutoDisabled: true}

var errUnknownType = errors.New("unknown history event type")

// route appends an event whose payload is data to the table of its type
// (the two-step path; tests and tools use it directly).
func (b *tables) route(e *event, data json.RawMessage) error {
	k, ok := kinds[e.typ]
	if !ok {
		return errUnknownType
	}
	return k.decodeData(b, e, data)
}

func (b *tables) addAvailability(e *event, p *schemas.AvailabilityChanged) error {
	a := &b.avail
	a.addCommon(e)
	a.supplier.add(p.SupplierID)
	a.product.add(p.ProductID)
	a.rate.add(p.RateID)
	a.start.add(utc(p.Start))
	a.end.add(utc(p.End))
	a.oldVac.add(clampInt32(p.OldVacancies))
	a.newVac.add(clampInt32(p.NewVacancies))
	a.oldStatus.add(p.OldStatus)
	a.newStatus.add(p.NewStatus)
	a.from.add(p.Source)
	b.tAvail.n++
	return nil
}

func (b *tables) addPrice(e *event, p *schemas.PriceChanged) error {
	r := &b.price
	r.addCommon(e)
	r.supplier.add(p.SupplierID)
	r.product.add(p.ProductID)
	r.rate.add(p.RateID)
	r.price.add(p.PriceID)
	r.start.add(utc(p.Start))
	r.end.add(utc(p.End))
	r.currency.add(p.Currency)
	r.oldRetail.add(money(p.OldRetail))
	r.newRetail.add(money(p.NewRetail))
	r.oldNet.add(money(p.OldNet))
	r.newNet.add(money(p.NewNet))
	r.from.add(p.Source)
	b.tPrice.n++
	return nil
}

func (b *tables) addNotification(e *event, p *schemas.NotificationProduced) error {
	n := &b.notif
	n.addCommon(e)
	n.delivery.add(p.DeliveryID)
	n.subscriber.add(p.Subscriber)
	n.typ.add(p.Type)
	n.entity.add(p.EntityKey)
	n.rule.add(p.RuleID)
	n.from.add(p.Source)
	b.tNotif.n++
	return nil
}

func (b *tables) addAttempt(e *event, p *schemas.DeliveryAttempt) error {
	b.addDelivery(e, p.DeliveryID, p.Subscriber, p.Type, p.Attempt, p.Status, p.LatencyMs, p.Outcome, p.Error, p.Notification)
	return nil
}

func (b *tables) addSuppressed(e *event, p *schemas.NotificationSuppressed) error {
	b.addDelivery(e, p.DeliveryID, p.Subscriber, p.Type, 0, 0, 0, schemas.OutcomeSuppressed, p.Reason, p.Notification)
	return nil
}

func (b *tables) addHold(e *event, p *schemas.HoldStatusChanged) error {
	b.addBooking(e, "hold", "", p.HoldID, p.ChannelID, p.SupplierID, p.ProductID, p.RateID, p.Status, p.PreviousStatus, "", p.Quantity, time.Time{}, p.ExpiresAt)
	return nil
}

func (b *tables) addBookingStatus(e *event, p *schemas.BookingStatusChanged) error {
	b.addBooking(e, "booking", p.BookingID, p.HoldID, p.ChannelID, p.SupplierID, p.ProductID, p.RateID, p.Status, p.PreviousStatus, p.ResellerReference, p.Quantity, p.StartTime, time.Time{})
	return nil
}

func (b *tables) addChangeRequest(e *event, p *schemas.ChangeRequestRun) error {
	c := &b.change
	c.addCommon(e)
	c.request.add(p.ID)
	c.supplier.add(p.SupplierID)
	c.product.add(p.ProductID)
	c.mode.add(p.Mode)
	c.status.add(p.Status)
	c.inserted.add(utc(p.Inserted))
	c.began.add(optionalTime(p.Began))
	c.finished.add(optionalTime(p.Finished))
	c.errText.add(p.Error)
	b.tChange.n++
	return nil
}

func (b *tables) addSyncReport(e *event, p *schemas.SyncReport) error {
	report := "[]"
	if len(p.ErrorReport) > 0 {
		raw, err := json.Marshal(p.ErrorReport)
		if err != nil {
			return err
		}
		report = string(raw)
	}
	s := &b.syncr
	s.addCommon(e)
	s.report.add(p.ID)
	s.system.add(p.ExternalSystemID)
	s.supplier.add(p.SupplierID)
	s.inserted.add(utc(p.Inserted))
	s.errorCount.add(clampUint32(int64(p.ErrorCount)))
	s.items.add(clampUint32(int64(p.Items)))
	s.errorReport.add(report)
	b.tSync.n++
	return nil
}

func (b *tables) addPartnerCall(e *event, p *schemas.PartnerCall) error {
	c := &b.partner
	c.addCommon(e)
	c.system.add(p.System)
	c.supplier.add(p.SupplierID)
	c.operation.add(p.Operation)
	c.status.add(clampUint16(p.Status))
	c.latency.add(clampUint32(p.LatencyMs))
	c.outcome.add(p.Outcome)
	c.errText.add(p.Error)
	b.tPartner.n++
	return nil
}

func (b *tables) addDelivery(e *event, delivery, subscriber, typ string, attempt, status int, latencyMs int64, outcome, errText string, notification json.RawMessage) {
	d := &b.deliv
	d.addCommon(e)
	d.delivery.add(delivery)
	d.subscriber.add(subscriber)
	d.typ.add(typ)
	d.attempt.add(clampUint16(attempt))
	d.status.add(clampUint16(status))
	d.latency.add(clampUint32(latencyMs))
	d.outcome.add(outcome)
	d.errText.add(errText)
	d.notif.add(string(notification))
	b.tDeliv.n++
}

func (b *tables) addBooking(e *event, kind, booking, hold, channel, supplier, product, rate, status, prev, reference string, quantity int, start, expires time.Time) {
	k := &b.book
	k.addCommon(e)
	k.kind.add(kind)
	k.booking.add(booking)
	k.hold.add(hold)
	k.channel.add(channel)
	k.supplier.add(supplier)
	k.product.add(product)
	k.rate.add(rate)
	k.status.add(status)
	k.prevStatus.add(prev)
	k.reference.add(reference)
	k.quantity.add(clampUint32(int64(quantity)))
	k.startTime.add(optionalTime(start))
	k.expiresAt.add(optionalTime(expires))
	b.tBook.n++
}

func (b *tables) addGeneric(e *event, payload []byte) {
	g := &b.generic
	g.addCommon(e)
	g.typ.add(e.typ)
	g.key.add(e.key)
	g.source.add(e.src)
	g.payload.add(string(payload))
	b.tGeneric.n++
}

// decode decodes a payload; an absent one is an error (every history type
// has fields that matter).
func decode(data json.RawMessage, v any) error {
	if len(data) == 0 || string(data) == "null" {
		return errors.New("no data")
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode %T: %w", v, err)
	}
	return nil
}

// DateTime holds seconds from 1970 to 2106; the driver refuses anything
// else, which would fail the whole batch again at every retry. A missing
// or absurd time is stored at the nearest bound instead.
var (
	minDateTime = time.Unix(0, 0).UTC()
	maxDateTime = time.Unix(math.MaxUint32, 0).UTC()
)

// utc is t in UTC, clamped to what DateTime holds.
func utc(t time.Time) time.Time {
	t = t.UTC()
	switch {
	case t.Before(minDateTime):
		return minDateTime
	case t.After(maxDateTime):
		return maxDateTime
	}
	return t
}

// optionalTime is NULL for an unset time.
func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := utc(t)
	return &u
}

// maxMoney is the largest amount Decimal(18, 4) holds.
const maxMoney = 99_999_999_999_999.0

// money keeps the spec's decimal amounts exact to the column's scale:
// NewFromFloat takes the shortest decimal that round-trips, so 12.35 stays
// 12.35 rather than 12.3499999. Amounts the column cannot hold are clamped:
// the driver would refuse them and fail the batch at every retry.
func money(f float64) decimal.Decimal {
	if math.IsNaN(f) {
		return decimal.Zero
	}
	return decimal.NewFromFloat(min(max(f, -maxMoney), maxMoney)).Round(4)
}

func clampUint16(v int) uint16 {
	return uint16(min(max(v, 0), math.MaxUint16))
}

func clampUint32(v int64) uint32 {
	return uint32(min(max(v, 0), math.MaxUint32))
}

func clampInt32(v int) int32 {
	return int32(min(max(v, math.MinInt32), math.MaxInt32))
}

package octo

import (
	"fmt"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/octowire"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/schemas"
)

// Availability statuses (OCTO's AvailabilityStatus).
const (
	statusAvailable = "AVAILABLE"
	statusLimited   = "LIMITED"
	statusSoldOut   = "SOLD_OUT"
	statusClosed    = "CLOSED"
	statusFreesale  = "FREESALE"
)

// freesaleCapacity is the capacity the catalog gives a FREESALE
// availability of a booking system (docs/decisions.md, "Availability,
// field by field"): at least that many is FREESALE again.
const freesaleCapacity = 1_000_000

const localDate = "2006-01-02"

// availabilityQuery is a checked availability or calendar request.
type availabilityQuery struct {
	p          product
	rate       catalog.RateData
	start, end time.Time // the window read, [start, end)
	firstDay   time.Time // local midnight of the first day (calendar)
	days       int       // days of the calendar
	ids        []string  // availabilityIds asked for
	need       int       // units asked for (0: none given)
}

// query checks an availability or calendar body (OCTO's
// AvailabilityCheckBody, AvailabilityCalendarBody).
func (s *Service) query(r *httpapi.Request, calendar bool) (availabilityQuery, error) {
	sup, err := s.visibleSupplier(r)
	if err != nil {
		return availabilityQuery{}, err
	}
	var b octowire.AvailabilityBody
	if err := decode(r, &b); err != nil {
		return availabilityQuery{}, err
	}
	p, err := s.loadProduct(r, sup.ID, b.ProductID)
	if err != nil {
		return availabilityQuery{}, err
	}
	rt, err := p.rate(b.OptionID)
	if err != nil {
		return availabilityQuery{}, err
	}
	q := availabilityQuery{p: p, rate: rt}
	for _, u := range b.Units {
		if _, err := unit(rt, u.ID); err != nil {
			return availabilityQuery{}, err
		}
		if u.Quantity < 0 {
			return availabilityQuery{}, badRequest("units[].quantity must not be negative")
		}
		q.need += u.Quantity
	}
	loc := p.location()
	day := func(field, v string) (time.Time, error) {
		t, err := time.ParseInLocation(localDate, v, loc)
		if err != nil {
			return time.Time{}, badRequest(field + " must be a date (YYYY-MM-DD)")
		}
		return t, nil
	}
	switch {
	case !calendar && b.LocalDate != "":
		if q.firstDay, err = day("localDate", b.LocalDate); err != nil {
			return availabilityQuery{}, err
		}
		q.days = 1
	case b.LocalDateStart != "" && b.LocalDateEnd != "":
		if q.firstDay, err = day("localDateStart", b.LocalDateStart); err != nil {
			return availabilityQuery{}, err
		}
		last, err := day("localDateEnd", b.LocalDateEnd)
		if err != nil {
			return availabilityQuery{}, err
		}
		if last.Before(q.firstDay) {
			return availabilityQuery{}, badRequest("localDateEnd must not be before localDateStart")
		}
		q.days = daysBetween(q.firstDay, last) + 1
	case !calendar && len(b.AvailabilityIDs) > 0:
		// Ids name no date: they are looked for from today over the
		// longest window the cache reads.
		now := s.now().In(loc)
		q.firstDay = time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
		q.start, q.end = q.firstDay, q.firstDay.Add(s.avail.MaxWindow())
		q.ids = b.AvailabilityIDs
		return q, nil
	case calendar:
		return availabilityQuery{}, badRequest("localDateStart and localDateEnd are required")
	default:
		return availabilityQuery{}, badRequest("either localDate, localDateStart/localDateEnd or availabilityIds is required")
	}
	q.start, q.end = q.firstDay, q.firstDay.AddDate(0, 0, q.days)
	if q.end.Sub(q.start) > s.avail.MaxWindow() {
		return availabilityQuery{}, badRequest(fmt.Sprintf("the date range is longer than %d days", int(s.avail.MaxWindow()/(24*time.Hour))))
	}
	return q, nil
}

func daysBetween(a, b time.Time) int {
	n := 0
	for d := a; d.Before(b); d = d.AddDate(0, 0, 1) {
		n++
	}
	return n
}

// read returns the availabilities of the query's option that start in
// its window and are not past, in order, through the reseller API's
// cache.
func (s *Service) read(r *httpapi.Request, q availabilityQuery) ([]schemas.Availability, error) {
	sid := r.Param(pSupplier)
	rates, _, err := s.avail.Lookup(r.Context(), r.ID, r.Principal.ChannelID, sid, q.p.data.ID, q.rate.ID, q.start, q.end)
	if err != nil {
		return nil, fail(err, invalidOption(q.rate.ID))
	}
	now := s.now()
	var out []schemas.Availability
	for _, rt := range rates {
		if rt.RateID != q.rate.ID {
			continue
		}
		for _, a := range rt.Availabilities {
			if a.Start.Before(q.start) || !a.Start.Before(q.end) || a.Start.Before(now) {
				continue
			}
			out = append(out, a)
		}
	}
	sortAvailabilities(out)
	return out, nil
}

func sortAvailabilities(as []schemas.Availability) {
	for i := 1; i < len(as); i++ {
		for j := i; j > 0 && as[j].Start.Before(as[j-1].Start); j-- {
			as[j], as[j-1] = as[j-1], as[j]
		}
	}
}

// availability answers POST /availability.
func (s *Service) availability(r *httpapi.Request) error {
	q, err := s.query(r, false)
	if err != nil {
		return err
	}
	as, err := s.read(r, q)
	if err != nil {
		return err
	}
	out := make([]octowire.Availability, 0, len(as))
	if q.ids != nil {
		byID := make(map[string]schemas.Availability, len(as))
		for _, a := range as {
			byID[a.ID] = a
		}
		for _, id := range q.ids {
			a, ok := byID[id]
			if !ok {
				return invalidAvailability(id)
			}
			out = append(out, octoAvailability(a, q))
		}
	} else {
		for _, a := range as {
			out = append(out, octoAvailability(a, q))
		}
	}
	return writeJSON(r, requested(r.Ctx), out)
}

// status is OCTO's status of an availability of the cache, with its
// vacancies and capacity (nil for FREESALE: no limit).
func status(a schemas.Availability) (string, *int, *int) {
	switch {
	case a.Capacity >= freesaleCapacity:
		return statusFreesale, nil, nil
	case a.Capacity <= 0:
		c := 0
		if a.MaxCapacity != nil {
			c = *a.MaxCapacity
		}
		return statusSoldOut, ptr(0), ptr(c)
	}
	total := a.Capacity
	if a.MaxCapacity != nil && *a.MaxCapacity >= a.Capacity {
		total = *a.MaxCapacity
	}
	// OCTO: LIMITED when fewer than half the places are left.
	if a.Capacity*2 < total {
		return statusLimited, ptr(a.Capacity), ptr(total)
	}
	return statusAvailable, ptr(a.Capacity), ptr(total)
}

func bookable(st string) bool {
	return st == statusAvailable || st == statusLimited || st == statusFreesale
}

// fits reports whether need units fit the vacancies (nil: no limit).
func fits(vacancies *int, need int) bool { return vacancies == nil || need <= *vacancies }

func octoAvailability(a schemas.Availability, q availabilityQuery) octowire.Availability {
	loc := q.p.location()
	st, vac, capa := status(a)
	out := octowire.Availability{ID: a.ID, LocalDateTimeStart: a.Start.In(loc).Format(time.RFC3339),
		LocalDateTimeEnd: a.End.In(loc).Format(time.RFC3339), UTCCutoffAt: a.Start.UTC().Format(time.RFC3339),
		Status: st, Vacancies: vac, Capacity: capa, OpeningHours: []octowire.OpeningHours{}}
	out.Available = bookable(st) && fits(vac, max(q.need, 1))
	if q.rate.MaxTravelers > 0 {
		out.MaxUnits = ptr(q.rate.MaxTravelers)
	}
	if q.p.data.AvailabilityType == availabilityOpeningHours {
		out.AllDay = true
		out.OpeningHours = []octowire.OpeningHours{{From: a.Start.In(loc).Format("15:04"), To: a.End.In(loc).Format("15:04")}}
	}
	return out
}

// calendar answers POST /availability/calendar: one day per local date
// of the range, CLOSED when nothing starts on it.
func (s *Service) calendar(r *httpapi.Request) error {
	q, err := s.query(r, true)
	if err != nil {
		return err
	}
	as, err := s.read(r, q)
	if err != nil {
		return err
	}
	loc := q.p.location()
	byDay := make(map[string][]schemas.Availability)
	for _, a := range as {
		d := a.Start.In(loc).Format(localDate)
		byDay[d] = append(byDay[d], a)
	}
	out := make([]octowire.CalendarDay, 0, q.days)
	for i := 0; i < q.days; i++ {
		d := q.firstDay.AddDate(0, 0, i).Format(localDate)
		out = append(out, calendarDay(d, byDay[d], q))
	}
	return writeJSON(r, requested(r.Ctx), out)
}

func calendarDay(day string, as []schemas.Availability, q availabilityQuery) octowire.CalendarDay {
	out := octowire.CalendarDay{LocalDate: day, Status: statusClosed, OpeningHours: []octowire.OpeningHours{}}
	if len(as) == 0 {
		return out
	}
	rank := map[string]int{statusSoldOut: 1, statusLimited: 2, statusAvailable: 3, statusFreesale: 4}
	vac, capa, freesale := 0, 0, false
	best := statusSoldOut
	for _, a := range as {
		st, v, c := status(a)
		if rank[st] > rank[best] {
			best = st
		}
		if v == nil {
			freesale = true
		} else {
			vac += *v
			capa += *c
		}
		if bookable(st) && fits(v, max(q.need, 1)) {
			out.Available = true
		}
		if q.p.data.AvailabilityType == availabilityOpeningHours {
			loc := q.p.location()
			out.OpeningHours = append(out.OpeningHours, octowire.OpeningHours{From: a.Start.In(loc).Format("15:04"), To: a.End.In(loc).Format("15:04")})
		}
	}
	out.Status = best
	if !freesale {
		out.Vacancies, out.Capacity = ptr(vac), ptr(capa)
	}
	return out
}

package reseller

import (
	"net/http"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
)

// priceScheduleResponse is GET .../rates/{rate_id}/priceschedule. Meta
// is embedded, so that Request.JSON fills it instead of adding a meta of
// its own (one "meta" key: strict parsers refuse two).
type priceScheduleResponse struct {
	httpapi.Meta  `json:"meta"`
	PriceSchedule catalog.PriceSchedule `json:"priceSchedule"`
}

// priceSchedule answers the schedule of a rate bound to the reseller's
// channel, prices filtered by the binding's priceTags, entries limited to
// those overlapping start..end (optional dates, inclusive).
func (h handlers) priceSchedule(r *httpapi.Request) error {
	args := r.Ctx.QueryArgs()
	from, err := parseDate("start", string(args.Peek("start")))
	if err != nil {
		return err
	}
	until, err := parseDate("end", string(args.Peek("end")))
	if err != nil {
		return err
	}
	if !from.IsZero() && !until.IsZero() && until.Before(from) {
		return apierror.Invalid("end", "must not be before start")
	}
	ps, err := h.st.ChannelPriceSchedule(r.Context(), r.Principal.ChannelID, r.Param(pSupplier), r.Param(pProduct), r.Param(pRate), from, until, r.Time())
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, &priceScheduleResponse{PriceSchedule: ps})
}

// parseDate reads an optional date: YYYY-MM-DD, or an RFC 3339 time
// whose UTC date is taken (resellers pass the availability window as is).
func parseDate(field, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if d, err := time.Parse(time.DateOnly, v); err == nil {
		return d, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t.UTC().Truncate(24 * time.Hour), nil
	}
	return time.Time{}, apierror.Invalid(field, "must be a date YYYY-MM-DD or an RFC 3339 time")
}

package registry

import (
	"fmt"
	"time"
)

// MaxThrottleDelay bounds throttleDelay. The spec gives no bound; a delay
// of more than a day before each notification would only fill the
// subscriber's backlog until delivery is auto-disabled
// (docs/decisions.md).
const MaxThrottleDelay = 24 * time.Hour

// ParseThrottleDelay parses a throttleDelay (spec doc 1, "Metadata"): "a
// possibly signed sequence of decimal numbers, each with optional fraction
// and a unit suffix; units ns, us (or µs), ms, s, m, h". That is exactly
// the grammar of time.ParseDuration (which also admits a bare "0"), so it
// is used as is. A negative delay is refused: there is no sending before
// the notification exists. So is one over MaxThrottleDelay.
func ParseThrottleDelay(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("is not a duration such as 500ms, 2s or 1m30s (units ns, us, µs, ms, s, m, h)")
	}
	if d < 0 {
		return 0, fmt.Errorf("must not be negative")
	}
	if d > MaxThrottleDelay {
		return 0, fmt.Errorf("must be at most %s", MaxThrottleDelay)
	}
	return d, nil
}

// MetadataInput is a PUT /metadata body: a nil field keeps its current
// value (docs/decisions.md: a partial update, so that changing the
// throttle never silently re-enables delivery that the service disabled).
type MetadataInput struct {
	ThrottleDelay *string
	DisableAll    *bool
}

// validate checks the input; the error names the field.
func (in MetadataInput) validate() error {
	if in.ThrottleDelay != nil {
		if _, err := ParseThrottleDelay(*in.ThrottleDelay); err != nil {
			return invalid("throttleDelay", err.Error())
		}
	}
	return nil
}

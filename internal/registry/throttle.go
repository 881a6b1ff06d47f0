package registry

import (
	"fmt"
	"regexp"
	"time"
)

// MaxThrottleDelay bounds throttleDelay. The spec gives no bound; a delay
// of more than a day before each notification would only fill the
// subscriber's backlog until delivery is auto-disabled
// (docs/decisions.md).
const MaxThrottleDelay = 24 * time.Hour

// throttleGrammar is the spec's grammar of throttleDelay (spec doc 1,
// "Metadata"): "a possibly signed sequence of decimal numbers, each with
// optional fraction and a unit suffix; units ns, us (or µs), ms, s, m, h".
// µ is U+00B5 (micro sign), as the spec writes it. time.ParseDuration
// admits more (a bare "0", U+03BC Greek mu), so the grammar is checked
// first and ParseDuration only computes the value.
var throttleGrammar = regexp.MustCompile(`^[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|\x{00B5}s|ms|s|m|h))+$`)

// ParseThrottleDelay parses a throttleDelay exactly as the spec describes
// it. A negative delay is refused: there is no sending before the
// notification exists. So is one over MaxThrottleDelay.
func ParseThrottleDelay(s string) (time.Duration, error) {
	if !throttleGrammar.MatchString(s) {
		return 0, fmt.Errorf("is not a duration such as 0s, 500ms, 2s or 1m30s (decimal numbers each with a unit: ns, us, µs, ms, s, m, h)")
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("is out of range")
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

package domainerr

import (
	"errors"
	"fmt"
	"testing"
)

func TestFieldError_MatchesInvalidSentinelsOnly(t *testing.T) {
	errInvalid := New(CodeInvalidField, "invalid rule")
	errNotFound := New("NOT_FOUND", "rule not found")
	fe := fmt.Errorf("create: %w", Field("config.maxLookAheadDays", "must be positive"))
	tests := []struct {
		name   string
		err    error
		target error
		want   bool
	}{
		{"field error is the invalid sentinel", fe, errInvalid, true},
		{"field error is another package's invalid sentinel", fe, New(CodeInvalidField, "invalid principal"), true},
		{"field error is not not-found", fe, errNotFound, false},
		{"sentinel is itself", errNotFound, errNotFound, true},
		{"two sentinels of one code are distinct", errNotFound, New("NOT_FOUND", "x"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errors.Is(tt.err, tt.target); got != tt.want {
				t.Errorf("errors.Is = %v, want %v", got, tt.want)
			}
		})
	}
	var f *FieldError
	if !errors.As(fe, &f) || f.ErrorField() != "config.maxLookAheadDays" || f.ErrorCode() != CodeInvalidField {
		t.Errorf("As/ErrorField/ErrorCode wrong: %+v", f)
	}
}

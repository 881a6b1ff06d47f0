package apierror

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/switchbackhq/switchback/internal/platform/domainerr"
	"github.com/switchbackhq/switchback/internal/principals"
)

func TestFrom_MapsErrorsToCodeStatusAndMessage(t *testing.T) {
	secretCause := errors.New("dial tcp 10.0.0.7:9092: connection refused")
	tests := []struct {
		name    string
		err     error
		code    Code
		status  int
		message string
		data    map[string]string
	}{
		{"sentinel", ErrNotFound, NotFound, 404, "not found", nil},
		{"wrapped sentinel keeps the context", fmt.Errorf("rule r1: %w", ErrNotFound), NotFound, 404, "rule r1: not found", nil},
		{"conflict", fmt.Errorf("rule of type booking: %w", ErrConflict), Conflict, 409, "rule of type booking: already exists", nil},
		{"Invalid names the field", Invalid("channelId", "is required"), InvalidField, 400, "channelId is required", map[string]string{"field": "channelId"}},
		{"wrapped Invalid keeps data", fmt.Errorf("create: %w", Invalid("role", "is unknown")), InvalidField, 400, "create: role is unknown", map[string]string{"field": "role"}},
		{"domain not found", fmt.Errorf("revoke: %w", principals.ErrNotFound), NotFound, 404, "revoke: principal not found", nil},
		{"domain field error", &principals.FieldError{Field: "channelId", Reason: "is required for a reseller"}, InvalidField, 400, "channelId is required for a reseller", map[string]string{"field": "channelId"}},
		{"domain unavailable hides the cause", fmt.Errorf("publish: %w: %w", principals.ErrUnavailable, secretCause), Unavailable, 503, messageUnavailable, nil},
		{"unknown error is internal with a generic message", secretCause, Internal, 500, messageInternal, nil},
		{"unknown code is internal", New("TEAPOT", "short and stout"), Internal, 500, messageInternal, nil},
		{"forbidden", ErrForbidden, Forbidden, 403, "not allowed for this principal", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := From(tt.err)
			if got.Code != tt.code || got.Status() != tt.status || got.Message != tt.message {
				t.Fatalf("From = %s %d %q, want %s %d %q", got.Code, got.Status(), got.Message, tt.code, tt.status, tt.message)
			}
			if fmt.Sprint(got.Data) != fmt.Sprint(tt.data) {
				t.Errorf("data = %v, want %v", got.Data, tt.data)
			}
		})
	}
}

func TestFrom_NilIsNil(t *testing.T) {
	if From(nil) != nil {
		t.Fatal("From(nil) != nil")
	}
}

func TestErrorsIs_MatchesSentinelByCode(t *testing.T) {
	if !errors.Is(Invalid("x", "bad"), ErrInvalid) {
		t.Error("an Invalid error does not match ErrInvalid")
	}
	if errors.Is(New(NotFound, "x"), ErrConflict) {
		t.Error("a NOT_FOUND error matches ErrConflict")
	}
}

func TestCodes_EveryCodeHasAStatusAndTheListIsComplete(t *testing.T) {
	seen := map[Code]bool{}
	for _, c := range Codes() {
		if !c.Valid() || c.Status() < 400 {
			t.Errorf("code %s: status %d", c, c.Status())
		}
		seen[c] = true
	}
	if len(seen) != len(statuses) {
		t.Errorf("Codes() lists %d codes, the status table has %d", len(seen), len(statuses))
	}
	if Code("NOPE").Status() != http.StatusInternalServerError {
		t.Error("an unknown code is not 500")
	}
}

func TestBody_WireShape(t *testing.T) {
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{"data omitted when empty", New(NotFound, "no such rule"), `{"code":"NOT_FOUND","message":"no such rule","meta":{"reqId":"r-1"}}`},
		{"data present", Invalid("url", "must be https"), `{"code":"INVALID_FIELD","message":"url must be https","data":{"field":"url"},"meta":{"reqId":"r-1"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.err.Body("r-1"))
			if err != nil || string(b) != tt.want {
				t.Fatalf("body = %s (%v), want %s", b, err, tt.want)
			}
		})
	}
}

// TestFrom_NoticeKeepsItsMessage: an UNAVAILABLE or INTERNAL cause is
// replaced by a generic message (it may name dependencies), except a
// domainerr.Notice, which is written for the caller (the missing secrets
// key of issue 18).
func TestFrom_NoticeKeepsItsMessage(t *testing.T) {
	notice := domainerr.NewNotice("UNAVAILABLE", "set SWITCHBACK_SECRETS_KEY")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"notice", fmt.Errorf("supplier s1: %w", notice), "set SWITCHBACK_SECRETS_KEY"},
		{"plain unavailable", fmt.Errorf("redis at 10.0.0.7: %w", domainerr.New("UNAVAILABLE", "redis at 10.0.0.7 down")), messageUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := From(tt.err)
			if got.Code != Unavailable || got.Message != tt.want {
				t.Fatalf("From = %s %q, want UNAVAILABLE %q", got.Code, got.Message, tt.want)
			}
		})
	}
}

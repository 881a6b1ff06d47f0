package stream_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/switchbackhq/switchback/internal/platform/stream"
)

func TestRetrying_AppliesUntilDoneSkipsUnusableAndStopsWithCtx(t *testing.T) {
	errInvalid := errors.New("unusable")
	errRedis := errors.New("redis down")
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		answers []error // apply's answers in turn; past the end, nil
		want    error
		calls   int
		logged  []string // substrings of the log, in order
	}{
		{"applied at once", context.Background(), nil, nil, 1, nil},
		{"unusable is skipped", context.Background(), []error{errInvalid}, nil, 1,
			[]string{"registry: skipping an unusable record"}},
		{"wrapped unusable is skipped", context.Background(), []error{errors.Join(errors.New("offset 3"), errInvalid)}, nil, 1,
			[]string{"skipping an unusable record"}},
		{"failures are retried until applied", context.Background(), []error{errRedis, errRedis}, nil, 3,
			[]string{"registry: applying a record failed; retrying", "registry: applying a record failed; retrying"}},
		{"ctx ends the retries", ended, []error{errRedis, errRedis}, context.Canceled, 1,
			[]string{"applying a record failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			calls := 0
			h := stream.Retrying(tt.ctx, log, "registry", errInvalid, func(ctx context.Context, m stream.Message) error {
				if m.Topic != "t" || m.Offset != 7 {
					t.Errorf("apply got %s@%d, want t@7", m.Topic, m.Offset)
				}
				calls++
				if calls <= len(tt.answers) {
					return tt.answers[calls-1]
				}
				return nil
			})
			err := h(stream.Message{Topic: "t", Offset: 7})
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("handler = %v, want %v", err, tt.want)
			}
			if calls != tt.calls {
				t.Fatalf("apply called %d times, want %d", calls, tt.calls)
			}
			rest := logs.String()
			for _, want := range tt.logged {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("log %q lacks %q", logs.String(), want)
				}
				rest = rest[i+len(want):]
			}
			if tt.logged == nil && logs.Len() > 0 {
				t.Fatalf("logged %q, want nothing", logs.String())
			}
		})
	}
}

package httpapi_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/httpapi"
)

// TestAccessLog_LevelSetting: the access line is written at the level of
// Options.AccessLogLevel (SWITCHBACK_ACCESS_LOG), seen only when the
// logger lets that level through, and never with AccessLogOff.
func TestAccessLog_LevelSetting(t *testing.T) {
	tests := []struct {
		name      string
		access    slog.Level
		logger    slog.Level
		wantLine  bool
		wantLevel string
	}{
		{"debug lines hidden at info", slog.LevelDebug, slog.LevelInfo, false, ""},
		{"debug lines shown at debug", slog.LevelDebug, slog.LevelDebug, true, "DEBUG"},
		{"info lines shown at info", slog.LevelInfo, slog.LevelInfo, true, "INFO"},
		{"off even at debug", httpapi.AccessLogOff, slog.LevelDebug, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &catalogtest.SyncBuffer{}
			s := httpapi.New(httpapi.Options{
				Logger:         slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: tt.logger})),
				AccessLogLevel: tt.access,
				Principals:     principals.NewStore(&catalogtest.Recorder{}),
			})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- s.Serve(ln) }()
			resp, err := http.Get("http://" + ln.Addr().String() + "/v1.3/nothing")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := s.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			<-done
			var line string
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, "msg=request ") {
					line = l
				}
			}
			if (line != "") != tt.wantLine {
				t.Fatalf("access line %q, want one: %v\n%s", line, tt.wantLine, logs.String())
			}
			if tt.wantLine && !strings.Contains(line, "level="+tt.wantLevel) {
				t.Errorf("access line %q, want level %s", line, tt.wantLevel)
			}
		})
	}
}

package testharness

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestServeRewritten_RewritesOnlyAJSONOK(t *testing.T) {
	answer := func(status int, body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		})
	}
	drop := func(_ *http.Request, body any) any {
		m := body.(map[string]any)
		delete(m, "b")
		return m
	}
	tests := []struct {
		name     string
		h        http.Handler
		rewrite  func(*http.Request, any) any
		wantCode int
		wantBody string
	}{
		{"no rewrite", answer(200, `{"a":1,"b":2}`), nil, 200, `{"a":1,"b":2}`},
		{"rewritten", answer(200, `{"a":1,"b":2}`), drop, 200, `{"a":1}`},
		{"an error passes", answer(503, `{"b":2}`), drop, 503, `{"b":2}`},
		{"not JSON passes", answer(200, `b`), drop, 200, `b`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			ServeRewritten(rec, httptest.NewRequest(http.MethodGet, "/x", nil), tt.h, tt.rewrite)
			if rec.Code != tt.wantCode || rec.Body.String() != tt.wantBody {
				t.Fatalf("%d %s, want %d %s", rec.Code, rec.Body, tt.wantCode, tt.wantBody)
			}
		})
	}
}

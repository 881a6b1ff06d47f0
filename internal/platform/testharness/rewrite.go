package testharness

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
)

// ServeRewritten lets h answer r, and with a rewrite, serves rewrite's
// change of h's JSON answer instead: how a test makes a simulator answer
// what it would not (a field missing, a wrong value). An answer other than
// a 200 with a JSON body is passed on as it is.
func ServeRewritten(w http.ResponseWriter, r *http.Request, h http.Handler, rewrite func(*http.Request, any) any) {
	if rewrite == nil {
		h.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	var body any
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &body) != nil {
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
		return
	}
	out, _ := json.Marshal(rewrite(r, body))
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

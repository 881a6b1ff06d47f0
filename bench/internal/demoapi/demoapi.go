// Package demoapi drives a running switchback binary's API as the demo
// principals, for the load runs of bench/ (soak, e2elatency): credentials,
// one call helper, free loopback ports and the catalog bodies they share.
package demoapi

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// Cred is an API key and its secret.
type Cred struct{ Key, Secret string }

// The principals `SWITCHBACK_DEMO=true` creates.
var (
	Operator = Cred{"demo-operator", "demo-operator-secret"}
	Reseller = Cred{"demo-reseller", "demo-reseller-secret"}
)

// Call sends one request to the API at base (http://host:port) as who and
// returns the status and the whole body. Each run brings its own client:
// their pool settings differ with their loads.
func Call(c *http.Client, base string, who Cred, method, path, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-API-Key", who.Key)
	req.Header.Set("X-API-Secret", who.Secret)
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// Expect turns a Call's result into an error unless it is a 2xx.
func Expect(status int, body []byte, err error) error {
	if err != nil {
		return err
	}
	if status < 200 || status > 299 {
		return fmt.Errorf("status %d: %.300s", status, body)
	}
	return nil
}

// FreeAddr returns a loopback address free at the time of the call.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// ProductBody is a start-time product in Paris, instantly confirmed.
func ProductBody(id, name string) string {
	return `{"id":"` + id + `","name":"` + name + `","description":"d","timeZone":"Europe/Paris","availabilityType":"START_TIME",
"deliveryFormats":["QR_CODE"],"deliveryMethods":["TICKET"],"redemptionMethod":"DIGITAL","instantConfirmation":true,"locations":[{"name":"Start","type":"START","order":1}]}`
}

// RateBody is a holdable, cancelable rate without prices.
func RateBody(id string) string {
	return `{"id":"` + id + `","name":"Rate","cancelable":true,"holdable":true,"holdablePeriod":900,"maxTravelers":10,"minTravelers":1,"prices":[]}`
}

// AvailabilityBody is an operator's push of one two-hour window at 09:00
// UTC on day with the given capacity.
func AvailabilityBody(day time.Time, capacity int) string {
	s := day.Add(9 * time.Hour)
	return fmt.Sprintf(`{"availabilities":[{"id":"w","start":%q,"end":%q,"capacity":%d}]}`, s.Format(time.RFC3339), s.Add(2*time.Hour).Format(time.RFC3339), capacity)
}

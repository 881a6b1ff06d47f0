package schemas

import (
	"encoding/json"
	"testing"
	"time"
)

// The registry events' bytes as internal/registry wrote them before their
// payloads moved here (captured from its ruleEvent, storedRule and
// metadataEvent): records already on the compacted topics must read the
// same, and new records must be the same bytes.
func TestRegistryEvents_KeepTheirWireFormat(t *testing.T) {
	ts := time.Date(2026, 3, 4, 5, 6, 7, 8000, time.UTC)
	full := RuleState{ID: "r1", Type: "booking", URL: "https://hooks.example.com/b", Disabled: true, SecurityKey: "sealed:abc",
		CreatedOn: ts, UpdatedOn: ts.Add(time.Hour), Config: RuleConfig{Operations: []string{"canceled"}, SupplierIDs: []string{"S1"},
			ProductIDs: []string{"P1", "P2"}, RateIDs: []string{"R1"}, MaxLookAheadDays: 3, VacanciesUnder: 2}}
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"rule created, every field", RuleEvent{Subscriber: "sub-a", Type: "booking", RuleID: "r1", Rule: &full},
			`{"subscriber":"sub-a","type":"booking","ruleId":"r1","rule":{"id":"r1","type":"booking","url":"https://hooks.example.com/b","disabled":true,"securityKey":"sealed:abc","createdOn":"2026-03-04T05:06:07.000008Z","updatedOn":"2026-03-04T06:06:07.000008Z","config":{"operations":["canceled"],"supplierIDs":["S1"],"productIDs":["P1","P2"],"rateIDs":["R1"],"maxLookAheadDays":3,"vacanciesUnder":2}}}`},
		{"rule deleted", RuleEvent{Subscriber: "sub-a", Type: "booking", RuleID: "r1"},
			`{"subscriber":"sub-a","type":"booking","ruleId":"r1"}`},
		{"rule with zero fields", RuleEvent{Subscriber: "sub-a", Type: "supplier", RuleID: "r2", Rule: &RuleState{ID: "r2", Type: "supplier"}},
			`{"subscriber":"sub-a","type":"supplier","ruleId":"r2","rule":{"id":"r2","type":"supplier","url":"","disabled":false,"securityKey":"","createdOn":"0001-01-01T00:00:00Z","updatedOn":"0001-01-01T00:00:00Z","config":{}}}`},
		{"metadata with reason", MetadataEvent{Subscriber: "sub-a", Metadata: MetadataState{ThrottleDelay: "1s", DisableAll: true, CreatedOn: ts, UpdatedOn: ts}, Reason: "backlog"},
			`{"subscriber":"sub-a","metadata":{"throttleDelay":"1s","disableAll":true,"createdOn":"2026-03-04T05:06:07.000008Z","updatedOn":"2026-03-04T05:06:07.000008Z"},"reason":"backlog"}`},
		{"metadata never set", MetadataEvent{Subscriber: "sub-a", Metadata: MetadataState{ThrottleDelay: "0s"}},
			`{"subscriber":"sub-a","metadata":{"throttleDelay":"0s","disableAll":false}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("encoded\n %s\nwant\n %s", got, tt.want)
			}
			// Decoding the old bytes and encoding again gives them back.
			var again []byte
			switch tt.v.(type) {
			case RuleEvent:
				var ev RuleEvent
				if err := json.Unmarshal([]byte(tt.want), &ev); err != nil {
					t.Fatal(err)
				}
				again, err = json.Marshal(ev)
			case MetadataEvent:
				var ev MetadataEvent
				if err := json.Unmarshal([]byte(tt.want), &ev); err != nil {
					t.Fatal(err)
				}
				again, err = json.Marshal(ev)
			}
			if err != nil || string(again) != tt.want {
				t.Fatalf("round trip: %s, %v", again, err)
			}
		})
	}
}

func TestRuleKey_IsSubscriberSlashType(t *testing.T) {
	if got := RuleKey("sub-a", TypeBooking); got != "sub-a/booking" {
		t.Fatalf("RuleKey = %q", got)
	}
}

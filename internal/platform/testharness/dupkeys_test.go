package testharness_test

import (
	"testing"

	"github.com/switchbackhq/switchback/internal/platform/testharness"
)

func TestDuplicateKey_FindsTheFirstRepeatedKeyOfAnObject(t *testing.T) {
	tests := []struct{ body, want string }{
		{`{"meta":{"reqId":"a"},"meta":{"reqId":"b"},"priceSchedule":{}}`, "$.meta"},
		{`{"a":1,"b":{"c":[{"d":1},{"d":2,"d":3}]}}`, "$.b.c[1].d"},
		{`{"a":{"x":1},"b":{"x":1}}`, ""},
		{`[{"id":1},{"id":2}]`, ""},
		{`"just a string"`, ""},
		{``, ""},
		{`{"a":`, "not JSON: EOF"},
	}
	for _, tt := range tests {
		if got := testharness.DuplicateKey([]byte(tt.body)); got != tt.want {
			t.Errorf("DuplicateKey(%s) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

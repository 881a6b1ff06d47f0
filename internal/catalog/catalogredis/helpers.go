package catalogredis

import (
	"strconv"
	"time"
)

// millis is t in unix milliseconds.
func millis(t time.Time) int64 { return t.UnixMilli() }

// orEmpty is s, or an empty list for nil (the JSON is [] rather than null).
func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// idx is field[i], as the API names a list's element.
func idx(field string, i int) string { return field + "[" + strconv.Itoa(i) + "]" }

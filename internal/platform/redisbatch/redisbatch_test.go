package redisbatch

import (
	"fmt"
	"testing"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name   string
		owners string // one letter per entry
		max    int
		want   string
	}{
		{"empty", "", 3, "[]"},
		{"one owner", "aaa", 3, "[[0 1 2]]"},
		{"interleaved owners keep their order", "abab", 3, "[[0 2] [1 3]]"},
		{"an owner over the bound gets another call", "aaaaba", 2, "[[0 1] [2 3] [4] [5]]"},
		{"groups in the order of their first entry", "baab", 10, "[[0 3] [1 2]]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Split(len(tt.owners), func(i int) string { return tt.owners[i : i+1] }, tt.max)
			if s := fmt.Sprint(got); s != tt.want {
				t.Fatalf("Split(%q, max %d) = %s, want %s", tt.owners, tt.max, s, tt.want)
			}
		})
	}
}

// Package redisbatch splits a batch of writes into script calls: one call
// per owner (a subscriber, a supplier: what the keys' hash tag names, so
// one cluster slot a call), each bounded in size. The change path's
// scripts cost Redis more per call than per write (issue 17), so a batch
// writes each owner's entries in one call rather than one call each.
package redisbatch

// MaxPerCall is the most entries a script call takes: a call blocks Redis
// while it runs, and at a few microseconds an entry 256 of them stay well
// under a millisecond of an idle server's time.
const MaxPerCall = 256

// Split groups the indexes 0…n-1 by owner(i): each group one owner's
// indexes in the batch's order, at most max of them (an owner with more
// gets several groups, in order). Groups come in the order of their first
// index.
func Split(n int, owner func(i int) string, max int) [][]int {
	var out [][]int
	open := make(map[string]int)
	for i := range n {
		o := owner(i)
		g, ok := open[o]
		if !ok || len(out[g]) == max {
			out = append(out, nil)
			g = len(out) - 1
			open[o] = g
		}
		out[g] = append(out[g], i)
	}
	return out
}

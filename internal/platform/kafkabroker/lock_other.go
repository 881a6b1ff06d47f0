//go:build !unix

package kafkabroker

// lockDir is a no-op where flock is unavailable: only one process may use a
// data directory, and there nothing enforces it.
func lockDir(string) (func(), error) { return func() {}, nil }

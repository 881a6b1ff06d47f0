package testharness

import (
	"context"
	"sync"
)

// FlushingFence is the views' epoch as a write sees it, for the tests
// that a writer never publishes what it decided on a lost view (the
// catalog's and the registry's): each Epoch call takes the next answer
// ("" = the views are lost or being rebuilt; the last answer repeats),
// and the first call runs Lose if set (the FLUSHALL lands right after
// the write read the epoch).
type FlushingFence struct {
	mu      sync.Mutex
	answers []string
	lose    func()
}

// NewFlushingFence answers answers in turn and runs lose (if not nil) on
// the first call.
func NewFlushingFence(answers []string, lose func()) *FlushingFence {
	return &FlushingFence{answers: answers, lose: lose}
}

// Epoch is the next answer.
func (f *FlushingFence) Epoch(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.answers[0]
	if len(f.answers) > 1 {
		f.answers = f.answers[1:]
	}
	if f.lose != nil {
		f.lose()
		f.lose = nil
	}
	return e, nil
}

// FenceCase is one scenario of a fenced write.
type FenceCase struct {
	Name string
	// Answers are the fence's epochs in turn (NewFlushingFence).
	Answers []string
	// Flush: the views are lost right after the first epoch read.
	Flush bool
	// Refused: the write must be refused as unavailable (503) and
	// publish nothing; else it is decided on the view as usual.
	Refused bool
}

// FenceCases are the scenarios every fenced writer is held to: views
// complete (decided on the view), being rebuilt (refused before the
// lock), lost after the lock's epoch read (refused before the publish),
// and lost and rebuilt meanwhile (refused: the epoch changed).
func FenceCases() []FenceCase {
	return []FenceCase{
		{Name: "views complete: decided on the view", Answers: []string{"e1"}},
		{Name: "views being rebuilt: refused before the lock", Answers: []string{""}, Refused: true},
		{Name: "views lost after the lock's epoch read: refused before the publish", Answers: []string{"e1", ""}, Flush: true, Refused: true},
		{Name: "views lost and rebuilt meanwhile: refused", Answers: []string{"e1", "e2"}, Flush: true, Refused: true},
	}
}

package kafkabroker

import (
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go/protocol/describegroups"
)

// The keeper's rule, step by step over synthetic group descriptions: which
// members it would expire at which moment.
func TestSessionKeeper_ExpiresMembersSilentForTheirSessionTimeout(t *testing.T) {
	const timeout = 10 * time.Second
	type step struct {
		name    string
		after   time.Duration // since the start
		saw     string        // a request of this member just before the sweep ("" none)
		state   string
		members []string
		want    []string // expired by this sweep
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"a member never heard from is expired one timeout after it was first listed", []step{
			{name: "listed", state: "Stable", members: []string{"a"}},
			{name: "within", after: timeout, state: "Stable", members: []string{"a"}},
			{name: "past", after: timeout + time.Second, state: "Stable", members: []string{"a"}, want: []string{"a"}},
		}},
		{"a heartbeating member is never expired", []step{
			{name: "listed", state: "Stable", members: []string{"a"}},
			{name: "beat", after: 8 * time.Second, saw: "a", state: "Stable", members: []string{"a"}},
			{name: "beat again", after: 16 * time.Second, saw: "a", state: "Stable", members: []string{"a"}},
			{name: "later", after: 24 * time.Second, state: "Stable", members: []string{"a"}},
		}},
		{"a silent member is expired during a rebalance too: a lost one must not hold it up", []step{
			{name: "listed", state: "PreparingRebalance", members: []string{"lost"}},
			{name: "within", after: timeout, state: "CompletingRebalance", members: []string{"lost"}},
			{name: "past", after: timeout + time.Second, state: "PreparingRebalance", members: []string{"lost"}, want: []string{"lost"}},
		}},
		{"a member that rejoins is heard from", []step{
			{name: "beat", saw: "a", state: "Stable", members: []string{"a"}},
			{name: "rejoins", after: 9 * time.Second, saw: "a", state: "PreparingRebalance", members: []string{"a"}},
			{name: "within", after: 18 * time.Second, state: "Stable", members: []string{"a"}},
			{name: "past", after: 20 * time.Second, state: "Stable", members: []string{"a"}, want: []string{"a"}},
		}},
		{"a member that left is forgotten, and one listed again starts afresh", []step{
			{name: "listed", state: "Stable", members: []string{"a"}},
			{name: "gone", after: 5 * time.Second, state: "Empty"},
			{name: "back", after: 12 * time.Second, state: "Stable", members: []string{"a"}},
			{name: "within", after: 20 * time.Second, state: "Stable", members: []string{"a"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := &sessionKeeper{groups: map[string]*groupSessions{}}
			start := time.Now()
			// The group's timeout comes from a join of some member.
			k.saw("g", "", timeout)
			for _, st := range tt.steps {
				now := start.Add(st.after)
				if st.saw != "" {
					k.saw("g", st.saw, 0)
					k.groups["g"].seen[st.saw] = now
				}
				g := describegroups.ResponseGroup{GroupID: "g", GroupState: st.state}
				for _, m := range st.members {
					g.Members = append(g.Members, describegroups.ResponseGroupMember{MemberID: m})
				}
				got, _ := k.expiredMembers(g, now)
				if !slices.Equal(got, st.want) {
					t.Fatalf("%s: expired %v, want %v", st.name, got, st.want)
				}
			}
		})
	}
	t.Run("no timeout known: nothing is expired", func(t *testing.T) {
		k := &sessionKeeper{groups: map[string]*groupSessions{}}
		k.saw("g", "a", 0)
		g := describegroups.ResponseGroup{GroupID: "g", GroupState: "Stable", Members: []describegroups.ResponseGroupMember{{MemberID: "a"}}}
		if got, _ := k.expiredMembers(g, time.Now().Add(time.Hour)); len(got) != 0 {
			t.Fatalf("expired %v without a known session timeout", got)
		}
	})
}

package kafkabroker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/describegroups"
	"github.com/segmentio/kafka-go/protocol/leavegroup"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessionKeeper expires consumer group members that the embedded broker
// keeps without a session timer (defect R7, docs/reliability.md).
//
// kfake starts a member's session timer only once a JoinGroup or SyncGroup
// reply was handed to the member's connection. A member whose connection
// died while its JoinGroup was parked (a consumer process killed in the
// middle of a rebalance, or a client that gave up waiting) is still counted
// as joined: the leader gives it partitions, it never syncs, and nothing
// ever expires it. Its partitions are not consumed until another member
// joins or leaves, and every rebalance meanwhile waits its whole timeout for
// it, long enough for kfake to expire the members parked in JoinGroup (their
// session timers keep running there), who then rejoin as new members and
// restart the wait: the availability processors stalled for minutes.
//
// A Kafka broker schedules every member's session expiry when a rebalance
// completes, whether or not the reply reached it. The keeper restores that
// rule from outside: it notes each member's last request (JoinGroup,
// SyncGroup, Heartbeat), and a member seen in a group that has shown no sign
// of life for the group's session timeout is removed with a LeaveGroup on
// its behalf, as the broker would have expired it. It never touches a
// member that is heartbeating, so a broker without the defect is unaffected.
//
// Unlike Kafka it does not spare a member awaiting its JoinGroup answer:
// seen from outside, a new member parked in its first join and a lost one
// look the same (neither ever sent a request under the id the broker gave
// it), and sparing both while the group rebalances let the lost ones stall
// it again (tried: a 24 s bound missed in round 2). A rejoining member
// parked that long is expired by kfake itself anyway (its session timer
// runs while it waits), and a rebalance that keeps a new member waiting a
// whole session timeout is one already stuck on a member that will not join.
type sessionKeeper struct {
	cluster   *kfake.Cluster
	transport *kafka.Transport
	addr      net.Addr
	log       *slog.Logger

	mu     sync.Mutex
	groups map[string]*groupSessions
	// expired counts the members removed (ExpiredMembers in tests).
	expired int

	cancel context.CancelFunc
	done   chan struct{}
}

type groupSessions struct {
	// timeout is the longest session timeout a member asked for.
	timeout time.Duration
	// seen is each member's last request, or the first sweep that listed
	// it (a member created by a JoinGroup without an id is only known by
	// the id the broker gave it).
	seen map[string]time.Time
}

const (
	// keeperInterval is how often the groups are described: a dead member
	// goes at most this long past its session timeout.
	keeperInterval = 500 * time.Millisecond
	// observerRenewal bounds kfake's per-connection bookkeeping of a
	// control function (it remembers the last request of every connection
	// it ever ran for): each observer is replaced by a fresh one this often.
	observerRenewal = 10 * time.Minute
	keeperTimeout   = 5 * time.Second
)

// startSessionKeeper installs the observers and starts the sweeps.
func startSessionKeeper(cluster *kfake.Cluster, addr string, log *slog.Logger) *sessionKeeper {
	ctx, cancel := context.WithCancel(context.Background())
	k := &sessionKeeper{
		cluster: cluster,
		// One connection, reused by every sweep; short timeouts so that
		// Close never waits on a sweep for long.
		transport: &kafka.Transport{DialTimeout: keeperTimeout, IdleTimeout: time.Minute, ClientID: "switchback-broker-sessions"},
		addr:      kafka.TCP(addr),
		log:       log,
		groups:    map[string]*groupSessions{},
		cancel:    cancel,
		done:      make(chan struct{}),
	}
	for _, key := range []int16{kmsg.JoinGroup.Int16(), kmsg.SyncGroup.Int16(), kmsg.Heartbeat.Int16()} {
		k.observe(key)
	}
	go k.run(ctx)
	return k
}

// observe adds a control function that notes a request of the key and lets
// the broker handle it as usual.
func (k *sessionKeeper) observe(key int16) {
	born := time.Now()
	k.cluster.ControlKey(key, func(req kmsg.Request) (kmsg.Response, error, bool) {
		switch r := req.(type) {
		case *kmsg.JoinGroupRequest:
			k.saw(r.Group, r.MemberID, time.Duration(r.SessionTimeoutMillis)*time.Millisecond)
		case *kmsg.SyncGroupRequest:
			k.saw(r.Group, r.MemberID, 0)
		case *kmsg.HeartbeatRequest:
			k.saw(r.Group, r.MemberID, 0)
		}
		if time.Since(born) > observerRenewal {
			k.cluster.DropControl()
			k.observe(key)
		}
		return nil, nil, false
	})
}

func (k *sessionKeeper) saw(group, member string, timeout time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	gs := k.groups[group]
	if gs == nil {
		gs = &groupSessions{seen: map[string]time.Time{}}
		k.groups[group] = gs
	}
	if timeout > gs.timeout {
		gs.timeout = timeout
	}
	if member != "" {
		gs.seen[member] = time.Now()
	}
}

func (k *sessionKeeper) run(ctx context.Context) {
	defer close(k.done)
	t := time.NewTicker(keeperInterval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := k.sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			// Once per run of failures: a sweep runs twice a second.
			k.log.Warn("embedded broker: group session sweep failed", "error", err)
			failing = true
		case err == nil && failing:
			k.log.Info("embedded broker: group session sweeps work again")
			failing = false
		}
	}
}

// sweep describes every group a member joined and removes the members past
// their session timeout.
func (k *sessionKeeper) sweep(ctx context.Context) error {
	k.mu.Lock()
	names := make([]string, 0, len(k.groups))
	for name := range k.groups {
		names = append(names, name)
	}
	k.mu.Unlock()
	if len(names) == 0 {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, keeperTimeout)
	defer cancel()
	m, err := k.transport.RoundTrip(sctx, k.addr, &describegroups.Request{Groups: names})
	if err != nil {
		return fmt.Errorf("describe groups: %w", err)
	}
	resp, ok := m.(*describegroups.Response)
	if !ok {
		return fmt.Errorf("describe groups: unexpected response %T", m)
	}
	var errs []error
	for _, g := range resp.Groups {
		if g.ErrorCode != 0 {
			continue // being loaded or gone: next sweep
		}
		expired, timeout := k.expiredMembers(g, time.Now())
		for _, member := range expired {
			if err := k.leave(sctx, g.GroupID, member); err != nil {
				errs = append(errs, err)
				continue
			}
			k.mu.Lock()
			k.expired++
			k.mu.Unlock()
			k.log.Warn("embedded broker: removed a group member that showed no sign of life for its session timeout (a kfake defect keeps such members; docs/reliability.md R7)",
				"group", g.GroupID, "member", member, "sessionTimeout", timeout)
		}
	}
	return errors.Join(errs...)
}

// expiredMembers updates the group's members from a description and returns
// those past the session timeout, for sweep to remove.
func (k *sessionKeeper) expiredMembers(g describegroups.ResponseGroup, now time.Time) ([]string, time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	gs := k.groups[g.GroupID]
	if gs == nil {
		return nil, 0
	}
	listed := make(map[string]struct{}, len(g.Members))
	var expired []string
	for _, m := range g.Members {
		listed[m.MemberID] = struct{}{}
		last, ok := gs.seen[m.MemberID]
		if !ok {
			gs.seen[m.MemberID] = now
			continue
		}
		if gs.timeout > 0 && now.Sub(last) > gs.timeout {
			expired = append(expired, m.MemberID)
		}
	}
	// Members that left or were expired by the broker itself.
	for id := range gs.seen {
		if _, ok := listed[id]; !ok {
			delete(gs.seen, id)
		}
	}
	// An expiry that fails is tried again a session timeout after the
	// member is next listed.
	for _, id := range expired {
		delete(gs.seen, id)
	}
	return expired, gs.timeout
}

func (k *sessionKeeper) leave(ctx context.Context, group, member string) error {
	m, err := k.transport.RoundTrip(ctx, k.addr, &leavegroup.Request{
		GroupID: group,
		// MemberID is what versions 0-2 carry, Members what 3+ carry.
		MemberID: member,
		Members:  []leavegroup.RequestMember{{MemberID: member}},
	})
	if err != nil {
		return fmt.Errorf("expire member of group %s: %w", group, err)
	}
	resp, ok := m.(*leavegroup.Response)
	if !ok {
		return fmt.Errorf("expire member of group %s: unexpected response %T", group, m)
	}
	code := resp.ErrorCode
	if code == 0 && len(resp.Members) > 0 {
		code = resp.Members[0].ErrorCode
	}
	// Unknown member: it went in the meantime, which is what was wanted.
	if code != 0 && kafka.Error(code) != kafka.UnknownMemberId {
		return fmt.Errorf("expire member of group %s: %w", group, kafka.Error(code))
	}
	return nil
}

// expiredCount is how many members the keeper removed.
func (k *sessionKeeper) expiredCount() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.expired
}

// stop ends the sweeps; the cluster must still be running or already
// closed (a sweep in flight then fails fast).
func (k *sessionKeeper) stop() {
	k.cancel()
	<-k.done
	k.transport.CloseIdleConnections()
}

package views

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// On a Redis Cluster a marker on one node says nothing about the others: a
// flush, a restart or a failover of one shard loses that shard's part of
// every view while the marker, on another shard, stays. So the guard keeps
// one marker per shard (master and its replicas), each in a slot of that
// shard ("<Key>:{<tag>}", the tag the first string of "0", "1", ... whose
// slot the shard serves), each prefixed by the run id of the node serving
// it, all carrying the same epoch. The views are complete while every
// shard's marker is there and of its node's current run; the epoch callers
// compare is all the markers together, so the loss of any shard changes
// it. A replica promoted by a failover has a run id of its own: its
// (replicated) marker counts as one of another server run, and the views
// are rebuilt, as the asynchronous replication may have lost the last
// writes. A resharding that gives a shard other slots changes the marker
// keys: a missing marker, a rebuild.

// clusterState is what the guard knows of a cluster.
type clusterState struct {
	cc *redis.ClusterClient

	mu      sync.Mutex
	runs    map[string]string // node address -> run id, learned on every new connection
	markers []string          // one key per shard, ordered by the shard's first slot
}

// OnConnectNode is the OnConnect hook of the cluster node at addr (set it
// through redis.ClusterOptions.NewClient). It learns the node's run id
// before the connection serves: a node that restarted (from an older
// snapshot or empty) turns the views lost at once; a node first seen (a
// promoted replica) makes the guard read every marker now.
func (g *Guard) OnConnectNode(addr string) func(ctx context.Context, cn *redis.Conn) error {
	return func(ctx context.Context, cn *redis.Conn) error {
		info, err := cn.Info(ctx, "server").Result()
		if err != nil {
			return nil // the command that dialled fails or succeeds on its own
		}
		id := runID(info)
		if id == "" {
			return nil
		}
		cs := g.cluster()
		if cs == nil {
			return nil
		}
		cs.mu.Lock()
		prev := cs.runs[addr]
		cs.runs[addr] = id
		cs.mu.Unlock()
		switch {
		case !g.started.Load():
		case prev != "" && prev != id:
			g.log.Warn("a Redis Cluster node restarted (new server run id)", "node", addr, "run_id", id)
			g.lost("restarted", "a Redis Cluster node restarted: its data may be older than the topics")
		case prev == "":
			g.wake()
		}
		return nil
	}
}

func (g *Guard) cluster() *clusterState { return g.cs.Load() }

// refreshMarkers recomputes the marker keys from the cluster's shards
// (CLUSTER SHARDS; CLUSTER SLOTS on a server older than Redis 7).
func (cs *clusterState) refreshMarkers(ctx context.Context, base string) ([]string, error) {
	var shards [][][2]int
	if list, err := cs.cc.ClusterShards(ctx).Result(); err == nil {
		for _, sh := range list {
			var ranges [][2]int
			for _, r := range sh.Slots {
				ranges = append(ranges, [2]int{int(r.Start), int(r.End)})
			}
			if len(ranges) > 0 {
				shards = append(shards, ranges)
			}
		}
	} else {
		//lint:ignore SA1019 the fallback for Redis 6, which has no CLUSTER SHARDS
		slots, serr := cs.cc.ClusterSlots(ctx).Result()
		if serr != nil {
			return nil, fmt.Errorf("read the cluster's shards: %w", serr)
		}
		shards = shardsOfSlots(slots)
	}
	keys, err := markerKeys(base, shards)
	if err != nil {
		return nil, err
	}
	cs.mu.Lock()
	cs.markers = keys
	cs.mu.Unlock()
	return keys, nil
}

// shardsOfSlots groups CLUSTER SLOTS' ranges by their master.
func shardsOfSlots(slots []redis.ClusterSlot) [][][2]int {
	byMaster := map[string]int{}
	var shards [][][2]int
	for _, s := range slots {
		if len(s.Nodes) == 0 {
			continue
		}
		id := s.Nodes[0].ID
		if id == "" {
			id = s.Nodes[0].Addr
		}
		i, ok := byMaster[id]
		if !ok {
			i = len(shards)
			byMaster[id] = i
			shards = append(shards, nil)
		}
		shards[i] = append(shards[i], [2]int{s.Start, s.End})
	}
	return shards
}

// markerKeys gives one marker key per shard (its slot ranges), ordered by
// the shard's first slot.
func markerKeys(base string, shards [][][2]int) ([]string, error) {
	if len(shards) == 0 {
		return nil, errors.New("the cluster serves no slots")
	}
	first := func(ranges [][2]int) int {
		f := ranges[0][0]
		for _, r := range ranges {
			f = min(f, r[0])
		}
		return f
	}
	shards = slices.Clone(shards)
	slices.SortFunc(shards, func(a, b [][2]int) int { return first(a) - first(b) })
	keys := make([]string, 0, len(shards))
	for _, ranges := range shards {
		tag := ""
		for i := 0; i < 1<<20 && tag == ""; i++ {
			t := strconv.Itoa(i)
			sl := Slot(t)
			for _, r := range ranges {
				if sl >= r[0] && sl <= r[1] {
					tag = t
					break
				}
			}
		}
		if tag == "" {
			return nil, fmt.Errorf("no marker tag for the shard of slot %d", first(ranges))
		}
		keys = append(keys, base+":{"+tag+"}")
	}
	return keys, nil
}

// keys are the current marker keys, read from the cluster if unknown.
func (cs *clusterState) keys(ctx context.Context, base string) ([]string, error) {
	cs.mu.Lock()
	k := cs.markers
	cs.mu.Unlock()
	if k != nil {
		return k, nil
	}
	return cs.refreshMarkers(ctx, base)
}

// prefix is what the marker key must start with: the run id of the node
// serving key ("-" while unknown) and "/".
func (cs *clusterState) prefix(ctx context.Context, key string) string {
	run := ""
	if node, err := cs.cc.MasterForKey(ctx, key); err == nil {
		cs.mu.Lock()
		run = cs.runs[node.Options().Addr]
		cs.mu.Unlock()
	}
	if run == "" {
		run = "-"
	}
	return run + "/"
}

// clusterEpoch reads every shard's marker in one pipeline (go-redis splits
// it per node): their values joined, or "" when any is missing or of
// another server run.
func (g *Guard) clusterEpoch(ctx context.Context, cs *clusterState) (string, error) {
	keys, err := cs.keys(ctx, g.o.Key)
	if err != nil {
		return "", fmt.Errorf("read the views markers: %w", err)
	}
	pipe := cs.cc.Pipeline()
	cmds := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.Get(ctx, k)
	}
	_, _ = pipe.Exec(ctx)
	return g.clusterEpochOf(ctx, cs, keys, cmds)
}

func (g *Guard) clusterEpochOf(ctx context.Context, cs *clusterState, keys []string, cmds []*redis.StringCmd) (string, error) {
	vals := make([]string, len(keys))
	missing := false
	for i, c := range cmds {
		v, err := c.Result()
		switch {
		case errors.Is(err, redis.Nil):
			missing = true
			continue
		case err != nil:
			return "", fmt.Errorf("read the views marker: %w", err)
		}
		if !strings.HasPrefix(v, cs.prefix(ctx, keys[i])) {
			missing = true // of another server run: the publish overwrites it
		}
		vals[i] = v
	}
	if missing {
		return "", nil
	}
	return strings.Join(vals, ","), nil
}

// Slot is the Redis Cluster hash slot of key (CRC16-XMODEM of the hash tag,
// or of the key without one, modulo 16384), as the Redis Cluster
// specification defines it.
func Slot(key string) int {
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			key = key[s+1 : s+1+e]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

// rebuildOnceCluster is rebuildOnce on a cluster: a sentinel in every
// shard (beside its marker, same slot), the views rebuilt while every
// sentinel is renewed, then every shard's marker published by the same
// script as on one server. A shard whose marker is there and of its run is
// adopted, a missing one set; the epoch is then read back whole.
func (g *Guard) rebuildOnceCluster(ctx context.Context, cs *clusterState, lost bool) (epoch, outcome string, err error) {
	keys, err := cs.refreshMarkers(ctx, g.o.Key)
	if err != nil {
		return "", "", err
	}
	rnd := randomHex(8)
	sentinels := make([]string, len(keys))
	pipe := g.rdb.Pipeline()
	for i, k := range keys {
		sentinels[i] = k + ":rebuilding:" + rnd
		pipe.Set(ctx, sentinels[i], "1", sentinelTTL)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return "", "", fmt.Errorf("views: put the rebuild sentinels: %w", err)
	}
	prefixes := func() []string {
		p := make([]string, len(keys))
		for i, k := range keys {
			p[i] = cs.prefix(ctx, k)
		}
		return p
	}
	runs := prefixes()
	published := false
	defer func() {
		if !published {
			g.dropSentinels(ctx, sentinels...)
		}
	}()
	return g.rebuildViews(ctx, lost, sentinels, func(lost bool) (string, string, error) {
		if !slices.Equal(prefixes(), runs) {
			return "", "", errLostAgain // a node restarted or failed over during the rebuild
		}
		set, err := g.publishCluster(ctx, keys, sentinels, runs, lost)
		published = true // the publish scripts ran: they delete the sentinels themselves
		if err != nil {
			return "", "", err
		}
		e, err := g.Epoch(ctx)
		if err != nil {
			return "", "", err
		}
		if e == "" {
			return "", "", errLostAgain
		}
		if set {
			return e, "rebuilt", nil
		}
		return e, "adopted", nil
	})
}

// publishCluster runs publishScript on every shard in one pipeline, as
// the end of rebuildOnceCluster: each shard's marker of its run is adopted,
// a missing one set (set says whether any was). A shard whose sentinel is
// gone (lost) or whose marker went missing (redo) fails the attempt.
func (g *Guard) publishCluster(ctx context.Context, keys, sentinels, runs []string, lost bool) (set bool, err error) {
	lostArg := "0"
	if lost {
		lostArg = "1"
	}
	nonce := randomHex(16)
	pipe := g.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(keys))
	for i, k := range keys {
		cmds[i] = publishScript.Eval(ctx, pipe, []string{k, sentinels[i]}, runs[i]+nonce, runs[i], lostArg)
	}
	_, _ = pipe.Exec(ctx)
	for _, c := range cmds {
		res, err := c.StringSlice()
		if err != nil {
			return false, fmt.Errorf("views: publish the epoch: %w", err)
		}
		switch res[0] {
		case "set":
			set = true
		case "adopt":
		default:
			return false, errLostAgain // lost, or redo
		}
	}
	return set, nil
}

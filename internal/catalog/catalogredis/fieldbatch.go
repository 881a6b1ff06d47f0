package catalogredis

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/redisbatch"
)

// applyFieldsScript is applyFieldScript for several fields of one version
// hash (one supplier's products, rates, availabilities and prices, or the
// channels), in order, and optionally the release of the supplier's write
// lock. Availability pushes are thousands a second and every one is
// applied twice (by the write and again by processors/catalogchange, which
// finds it already there): one call per field made the per-call cost of
// EVALSHA, not the few writes, most of what they cost Redis. KEYS:
// versions, lock (or versions again when nothing is released). ARGV: token
// (empty: nothing released), then per field: hash, version field, v, t,
// deleted, field, value. The hashes are the same supplier's (or the
// channels') as the versions key, so the same slot. Returns, per field, 1
// when it changed the view, else 0.
var applyFieldsScript = redis.NewScript(applyFieldLua + `
local out = {}
for i = 2, #ARGV, 7 do
  out[#out + 1] = applyField(KEYS[1], ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6])
end
if ARGV[1] ~= '' and redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return out
`)

// fieldCall is one call of a pipeline of versioned upserts: either one
// call as it is (another script), or applyFields over calls idx of one
// version hash.
type fieldCall struct {
	single int // index of the call, or -1
	idx    []int
}

// groupFields turns calls into pipeline calls: every applyFieldScript
// call of one version hash joins one applyFields call (at most
// redisbatch.MaxPerCall), in the calls' order; other scripts stay as they
// are, first. An entity is only ever written by one kind of script
// (fields, suppliers or bindings), so only calls of different entities
// change places, and those touch different fields.
func groupFields(calls []scriptCall) []fieldCall {
	var out []fieldCall
	var fields []int
	for i, c := range calls {
		if c.script == applyFieldScript {
			fields = append(fields, i)
		} else {
			out = append(out, fieldCall{single: i})
		}
	}
	versions := func(k int) string { return calls[fields[k]].keys[0] }
	for _, ks := range redisbatch.Split(len(fields), versions, redisbatch.MaxPerCall) {
		idx := make([]int, len(ks))
		for j, k := range ks {
			idx[j] = fields[k]
		}
		out = append(out, fieldCall{single: -1, idx: idx})
	}
	return out
}

// queueFields queues the grouped calls on pipe; releases maps a version
// hash to the lock its applyFields call releases with token (those it
// released are deleted from the map). The func it returns reads, after
// Exec, whether each call changed the view.
func queueFields(ctx context.Context, pipe redis.Pipeliner, calls []scriptCall, releases map[string]string, token string) func() []bool {
	groups := groupFields(calls)
	cmds := make([]*redis.Cmd, len(groups))
	for g, fc := range groups {
		if fc.single >= 0 {
			c := calls[fc.single]
			cmds[g] = c.script.EvalSha(ctx, pipe, c.keys, c.args...)
			continue
		}
		versions := calls[fc.idx[0]].keys[0]
		keys, tok := []string{versions, versions}, ""
		if lock, ok := releases[versions]; ok {
			keys[1], tok = lock, token
			delete(releases, versions)
		}
		args := make([]any, 1, 1+7*len(fc.idx))
		args[0] = tok
		for _, i := range fc.idx {
			c := calls[i]
			args = append(args, c.keys[1])
			args = append(args, c.args...)
		}
		cmds[g] = applyFieldsScript.EvalSha(ctx, pipe, keys, args...)
	}
	return func() []bool {
		applied := make([]bool, len(calls))
		for g, fc := range groups {
			if fc.single >= 0 {
				n, _ := cmds[g].Int()
				applied[fc.single] = n == 1
				continue
			}
			res, _ := cmds[g].Int64Slice()
			for k, i := range fc.idx {
				applied[i] = k < len(res) && res[k] == 1
			}
		}
		return applied
	}
}

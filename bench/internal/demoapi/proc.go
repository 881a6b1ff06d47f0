package demoapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// VmRSS is a process's resident memory in bytes, from /proc (0 if
// unreadable).
func VmRSS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb * 1024
		}
	}
	return 0
}

// CPUSeconds is the user+system CPU time a process has used, from
// /proc/<pid>/stat (0 if unreadable). Clock ticks are taken as 100/s, the
// value on every Linux this runs on.
func CPUSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: count from its ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	// After ')': state(3) ppid(4) ... utime(14) stime(15): indexes 11, 12.
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100
}

// Children lists the pids whose parent is pid (the embedded redis-server
// and clickhouse-server of `switchback run`).
func Children(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 {
			if pp, _ := strconv.Atoi(f[1]); pp == pid {
				out = append(out, c)
			}
		}
	}
	return out
}

// Comm is a process's command name, from /proc ("" if unreadable).
func Comm(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// InfoField reads one numeric field of a Redis INFO answer.
func InfoField(info, field string) float64 {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// Scrape reads an ops listener's /metrics and sums every series of each
// metric name.
func Scrape(ops string) (map[string]float64, error) {
	return scrape(ops, true)
}

// ScrapeSeries reads an ops listener's /metrics, one value per series
// (name{labels}).
func ScrapeSeries(ops string) (map[string]float64, error) {
	return scrape(ops, false)
}

func scrape(ops string, byName bool) (map[string]float64, error) {
	resp, err := http.Get("http://" + ops + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		name := line[:sp]
		if i := strings.IndexByte(name, '{'); i >= 0 && byName {
			name = name[:i]
		}
		out[name] += v
	}
	return out, sc.Err()
}

// RedisOf connects to the Redis a running binary uses, found from its
// ops listener's /readyz.
func RedisOf(ops string) (*redis.Client, error) {
	resp, err := http.Get("http://" + ops + "/readyz")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var rz struct {
		Dependencies map[string]struct {
			Kind    string `json:"kind"`
			Address string `json:"address"`
		} `json:"dependencies"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rz); err != nil {
		return nil, err
	}
	r := rz.Dependencies["redis"]
	if r.Address == "" {
		return nil, errors.New("/readyz gives no redis address")
	}
	addr := strings.TrimPrefix(strings.TrimPrefix(r.Address, "redis://"), "tcp://")
	if i := strings.IndexByte(addr, '/'); i >= 0 {
		addr = addr[:i]
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("redis at %s (%s): %w", addr, r.Kind, err)
	}
	return rdb, nil
}

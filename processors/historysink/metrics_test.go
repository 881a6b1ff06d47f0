package historysink

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// TestMetrics_PassPromtoolCheckMetrics lints the sink's metrics as CI lints
// a live scrape (promtool check metrics: names, units, help).
func TestMetrics_PassPromtoolCheckMetrics(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian package prometheus)")
	}
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	m.batchSeconds.Observe(0.1)
	m.batchEvents.Observe(10)
	m.observeLag(2, 5)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var scrape bytes.Buffer
	enc := expfmt.NewEncoder(&scrape, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = &scrape
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

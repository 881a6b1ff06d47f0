package main

import (
	"bytes"
	"fmt"
	"math"
	"time"
)

// chart draws the ramp as an SVG: changes/s asked (x, log scale) against
// webhooks/s delivered and changes/s sent (left axis, log scale), and p50
// and p99 latency (right axis, log scale, ms). The 250 ms target is a
// dashed line.
func chart(rs []stepResult) []byte {
	const (
		w, h                 = 760, 420
		left, right, top, bt = 70, 80, 40, 60
	)
	pw, ph := float64(w-left-right), float64(h-top-bt)
	var maxRate, maxMs float64 = 1, 1
	minRate := math.Inf(1)
	for _, r := range rs {
		maxRate = max(maxRate, float64(r.Asked), r.SentPerSec)
		minRate = min(minRate, float64(r.Asked))
		maxMs = max(maxMs, float64(r.P99)/float64(time.Millisecond))
	}
	lo := math.Pow(10, math.Floor(math.Log10(max(minRate/2, 1))))
	hi := math.Pow(10, math.Ceil(math.Log10(maxRate)))
	msLo, msHi := 1.0, math.Pow(10, math.Ceil(math.Log10(max(maxMs, 300))))
	x := func(v float64) float64 {
		return float64(left) + pw*(math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))
	}
	yRate := func(v float64) float64 {
		return float64(top) + ph*(1-(math.Log10(max(v, lo))-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo)))
	}
	yMs := func(v float64) float64 {
		return float64(top) + ph*(1-(math.Log10(max(v, msLo))-math.Log10(msLo))/(math.Log10(msHi)-math.Log10(msLo)))
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15">Change → webhook, one subscriber: throughput and latency by asked rate</text>`+"\n", left)
	// Grid and axes.
	for v := lo; v <= hi*1.001; v *= 10 {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/><text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n",
			x(v), top, x(v), h-bt, x(v), h-bt+16, human(v))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end" fill="#1f77b4">%s/s</text>`+"\n",
			left, yRate(v), w-right, yRate(v), left-6, yRate(v)+4, human(v))
	}
	for v := msLo; v <= msHi*1.001; v *= 10 {
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" fill="#d62728">%s ms</text>`+"\n", w-right+6, yMs(v)+4, human(v))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#d62728" stroke-dasharray="6,4"/><text x="%d" y="%.1f" fill="#d62728">p99 target 250 ms</text>`+"\n",
		left, yMs(250), w-right, yMs(250), left+6, yMs(250)-4)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">changes/s asked (operator PUTs, open loop)</text>`+"\n", left+int(pw/2), h-20)
	series := func(color, dash string, val func(stepResult) float64, y func(float64) float64, label string, row int) {
		var pts bytes.Buffer
		for _, r := range rs {
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(float64(r.Asked)), y(val(r)))
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="%s"/>`+"\n", pts.String(), color, dash)
		for _, r := range rs {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", x(float64(r.Asked)), y(val(r)), color)
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2" stroke-dasharray="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			left+10, top+12+row*16, left+34, top+12+row*16, color, dash, left+40, top+16+row*16, label)
	}
	delivered := func(r stepResult) float64 {
		if r.Sent == 0 {
			return 0
		}
		return r.SentPerSec * float64(r.Webhooks) / float64(r.Sent)
	}
	series("#1f77b4", "", delivered, yRate, "webhooks/s delivered (in-time share of sent)", 0)
	series("#7fb3d5", "4,3", func(r stepResult) float64 { return r.SentPerSec }, yRate, "changes/s sent", 1)
	series("#d62728", "", func(r stepResult) float64 { return float64(r.P99) / float64(time.Millisecond) }, yMs, "p99 latency", 2)
	series("#ff9896", "4,3", func(r stepResult) float64 { return float64(r.P50) / float64(time.Millisecond) }, yMs, "p50 latency", 3)
	b.WriteString("</svg>\n")
	return b.Bytes()
}

func human(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	default:
		return fmt.Sprintf("%g", v)
	}
}

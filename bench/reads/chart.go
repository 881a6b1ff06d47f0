package main

import (
	"bytes"
	"fmt"
)

// chart draws, per route, the req/s and the p99 as fractions of the
// ceiling's measured in the same rounds, with the targets as lines.
func chart(rs []result) []byte {
	const (
		w, rowH, left, top = 860, 34, 160, 50
	)
	h := top + rowH*len(rs) + 60
	scale := func(v, maxV float64) float64 { return float64(left) + (float64(w-left-40))*min(v, maxV)/maxV }
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15">Reseller reads against the fasthttp ceiling (same run, medians over rounds)</text>`+"\n", left-140)
	fmt.Fprintf(&b, `<text x="%d" y="40" fill="#1f77b4">req/s ÷ ceiling (scale 0–1.2)</text><text x="%d" y="40" fill="#d62728">p99 ÷ ceiling p99 (scale 0–6)</text>`+"\n", left, left+260)
	for _, x := range []float64{0.5, 0.8, 1.0} {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#1f77b4" stroke-dasharray="4,4" opacity="0.5"/><text x="%.1f" y="%d" fill="#1f77b4">%.1f×</text>`+"\n",
			scale(x, 1.2), top, scale(x, 1.2), h-50, scale(x, 1.2)-8, h-36, x)
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#d62728" stroke-dasharray="4,4" opacity="0.5"/><text x="%.1f" y="%d" fill="#d62728">p99 2×</text>`+"\n",
		scale(2, 6), top, scale(2, 6), h-50, scale(2, 6)-12, h-22)
	for i, r := range rs {
		_, _, _, _, ratio, pr := r.figures()
		y := top + i*rowH
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, y+16, r.name)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="11" fill="#1f77b4"/><text x="%.1f" y="%d">%.2f×</text>`+"\n",
			left, y+4, scale(ratio, 1.2)-float64(left), scale(ratio, 1.2)+4, y+14, ratio)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="11" fill="#d62728"/><text x="%.1f" y="%d">%.1f×</text>`+"\n",
			left, y+17, scale(pr, 6)-float64(left), scale(pr, 6)+4, y+27, pr)
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// Charts: deliveries per minute by outcome and delivery latency
// percentiles, from the history's per-minute aggregates
// (GET /registry/v1.1/deliveries/stats), drawn with uPlot.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { api, TYPES } from './api.js';
import { Busy, ErrorBox, Field, Heading, html, Time, useLoad } from './ui.js';

const RANGES = [
  ['15', 'last 15 minutes'],
  ['60', 'last hour'],
  ['360', 'last 6 hours'],
  ['1440', 'last 24 hours'],
];
export const OUTCOME_COLORS = {
  delivered: '#1a7f37',
  retry: '#bf8700',
  failed: '#cf222e',
  suppressed: '#6e7781',
  dropped: '#8250df',
};

function Chart({ title, label, series, data, yLabel }) {
  const box = useRef(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return undefined;
    const width = () => Math.max(280, el.clientWidth);
    const plot = new uPlot(
      {
        width: width(),
        height: 240,
        series: [{ label: 'time' }, ...series],
        axes: [{}, { label: yLabel, size: 56 }],
        scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max)] } },
        cursor: { drag: { x: false, y: false } },
      },
      data,
      el,
    );
    const ro = new ResizeObserver(() => plot.setSize({ width: width(), height: 240 }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      plot.destroy();
    };
  }, [data]);
  return html`<figure class="chart">
    <figcaption>${title}</figcaption>
    <div ref=${box} role="img" aria-label=${label}></div>
  </figure>`;
}

export function Charts() {
  const [minutes, setMinutes] = useState('60');
  const [type, setType] = useState('');
  const [state, reload] = useLoad(async () => {
    const from = new Date(Date.now() - Number(minutes) * 60 * 1000).toISOString();
    const { data } = await api('GET', '/registry/v1.1/deliveries/stats', { query: { from, type }, history: true });
    return data;
  }, [minutes, type]);
  const d = state.data;
  // uPlot's columns: time, then one series per outcome or percentile
  // (null where a minute had no attempt). Rebuilt only with new data, so
  // that the charts are redrawn only then.
  const [counts, latency] = useMemo(() => {
    if (!d) return [null, null];
    const xs = d.points.map((p) => Date.parse(p.at) / 1000);
    const q = (k) => d.points.map((p) => (p.latencyMs ? p.latencyMs[k] : null));
    return [
      [xs, ...Object.keys(OUTCOME_COLORS).map((o) => d.points.map((p) => p[o]))],
      [xs, q('p50'), q('p90'), q('p99')],
    ];
  }, [d]);
  const t = d && d.totals;
  const countSummary = t ? `deliveries per minute: ${Object.keys(OUTCOME_COLORS).map((o) => `${t[o]} ${o}`).join(', ')} in the range` : '';
  const latSummary = t && t.latencyMs ? `latency over the range: p50 ${t.latencyMs.p50} ms, p90 ${t.latencyMs.p90} ms, p99 ${t.latencyMs.p99} ms` : 'no attempt in the range';

  return html`<section class="view">
    <${Heading}>Charts<//>
    <p class="lead">Your deliveries per minute by outcome, and how long your endpoint took to answer (percentiles of the attempts of each minute).</p>
    <form class="filters" onSubmit=${(e) => e.preventDefault()} aria-label="Chart range">
      <${Field} id="c-range" label="Range"><select id="c-range" onChange=${(e) => setMinutes(e.currentTarget.value)}>${RANGES.map(([v, l]) => html`<option value=${v} selected=${v === minutes}>${l}</option>`)}</select><//>
      <${Field} id="c-type" label="Type"><select id="c-type" onChange=${(e) => setType(e.currentTarget.value)}><option value="">any</option>${TYPES.map((x) => html`<option value=${x} selected=${x === type}>${x}</option>`)}</select><//>
      <div class="buttons"><button type="button" onClick=${() => reload()}>Refresh</button></div>
    </form>
    <${ErrorBox} error=${state.error} />
    ${state.loading && html`<${Busy} label="Aggregating the delivery log…" />`}
    ${t &&
    html`<dl class="totals" data-totals>
      ${Object.keys(OUTCOME_COLORS).map((o) => html`<div data-outcome=${o}><dt><span class="swatch" style=${{ background: OUTCOME_COLORS[o] }}></span>${o}</dt><dd>${t[o]}</dd></div>`)}
      <div><dt>attempts</dt><dd>${t.attempts}</dd></div>
      <div data-latency><dt>latency p50 / p90 / p99</dt><dd>${t.latencyMs ? `${t.latencyMs.p50} / ${t.latencyMs.p90} / ${t.latencyMs.p99} ms` : '—'}</dd></div>
    </dl>
    <p class="muted small">From <${Time} value=${d.from} /> to <${Time} value=${d.to} />, one point per minute.</p>`}
    ${counts &&
    html`<div class="charts">
      <${Chart}
        title="Deliveries per minute by outcome"
        label=${countSummary}
        yLabel="per minute"
        data=${counts}
        series=${Object.entries(OUTCOME_COLORS).map(([o, c]) => ({ label: o, stroke: c, width: 2, points: { show: true, size: 4 } }))}
      />
      <${Chart}
        title="Delivery latency (ms)"
        label=${latSummary}
        yLabel="ms"
        data=${latency}
        series=${[
          { label: 'p50', stroke: '#0969da', width: 2, spanGaps: false, points: { show: true, size: 5 } },
          { label: 'p90', stroke: '#bf8700', width: 2, spanGaps: false, points: { show: true, size: 5 } },
          { label: 'p99', stroke: '#cf222e', width: 2, spanGaps: false, points: { show: true, size: 5 } },
        ]}
      />
    </div>`}
  </section>`;
}

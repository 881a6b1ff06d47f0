// Deliveries: the subscriber's delivery log (every attempt with its HTTP
// status and latency), filtered by type, outcome, status, time or delivery,
// and the replay of a range of undelivered notifications with its progress.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, TYPES } from './api.js';
import { Badge, Busy, ErrorBox, Field, fromLocalInput, Heading, html, Progress, Time, toLocalInput, useLoad, usePoll } from './ui.js';

const OUTCOMES = ['delivered', 'retry', 'failed', 'suppressed', 'dropped'];
const REPLAYABLE = ['suppressed', 'failed', 'dropped'];
const PAGE = 50;

function filtersFrom(params) {
  return {
    type: params.get('type') || '',
    outcome: params.get('outcome') || '',
    status: params.get('status') || '',
    from: '',
    to: '',
    deliveryId: params.get('deliveryId') || '',
  };
}

export function Deliveries({ params }) {
  const [filters, setFilters] = useState(() => filtersFrom(params));
  const [offset, setOffset] = useState(0);
  const [auto, setAuto] = useState(false);
  const [state, reload] = useLoad(async () => {
    const q = { limit: PAGE, offset, type: filters.type, outcome: filters.outcome, status: filters.status, deliveryId: filters.deliveryId };
    if (filters.from) q.from = fromLocalInput(filters.from)?.toISOString();
    if (filters.to) q.to = fromLocalInput(filters.to)?.toISOString();
    const { data } = await api('GET', '/registry/v1.1/deliveries', { query: q, history: true });
    return data;
  }, [filters, offset]);
  usePoll(reload, 5000, auto);
  // A link from another view (#/deliveries?deliveryId=...) sets the filter
  // (the first render already read it).
  const shown = useRef(params.toString());
  useEffect(() => {
    if (shown.current === params.toString()) return;
    shown.current = params.toString();
    setFilters(filtersFrom(params));
    setOffset(0);
  }, [params.toString()]);

  const apply = (ev) => {
    ev.preventDefault();
    const f = ev.currentTarget;
    const v = (id) => f.querySelector('#' + id).value.trim();
    setOffset(0);
    setFilters({ type: v('f-type'), outcome: v('f-outcome'), status: v('f-status'), from: v('f-from'), to: v('f-to'), deliveryId: v('f-delivery') });
  };
  const showDelivery = (id) => {
    setOffset(0);
    setFilters({ type: '', outcome: '', status: '', from: '', to: '', deliveryId: id });
  };
  const items = (state.data && state.data.items) || [];
  const paging = state.data && state.data.paging;

  return html`<section class="view">
    <${Heading}>Deliveries<//>
    <p class="lead">Every attempt to deliver a notification to you, newest first: its HTTP status, how long your endpoint took, and the outcome. Test notifications are listed too.</p>
    <form class="filters" onSubmit=${apply} key=${JSON.stringify(filters)} aria-label="Filters">
      <${Field} id="f-type" label="Type"><select id="f-type"><option value="">any</option>${TYPES.map((t) => html`<option value=${t} selected=${filters.type === t}>${t}</option>`)}</select><//>
      <${Field} id="f-outcome" label="Outcome"><select id="f-outcome"><option value="">any</option>${OUTCOMES.map((o) => html`<option value=${o} selected=${filters.outcome === o}>${o}</option>`)}</select><//>
      <${Field} id="f-status" label="HTTP status"><input id="f-status" inputmode="numeric" size="5" defaultValue=${filters.status} /><//>
      <${Field} id="f-from" label="From"><input id="f-from" type="datetime-local" defaultValue=${filters.from} /><//>
      <${Field} id="f-to" label="To"><input id="f-to" type="datetime-local" defaultValue=${filters.to} /><//>
      <${Field} id="f-delivery" label="Delivery id"><input id="f-delivery" spellcheck="false" defaultValue=${filters.deliveryId} /><//>
      <div class="buttons">
        <button type="submit" class="primary">Apply</button>
        <button type="button" onClick=${() => reload()} data-action="refresh">Refresh</button>
        <label class="check"><input type="checkbox" checked=${auto} onChange=${(e) => setAuto(e.currentTarget.checked)} /> every 5 s</label>
      </div>
    </form>
    ${filters.deliveryId && html`<p class="notice">Attempts of delivery <code>${filters.deliveryId}</code>. <button type="button" class="small" onClick=${() => showDelivery('')}>Show all deliveries</button></p>`}
    <${ErrorBox} error=${state.error} />
    ${state.loading && html`<${Busy} label="Reading the delivery log…" />`}
    ${state.data &&
    html`<div class="table-wrap"><table class="deliveries stack" aria-busy=${state.loading}>
      <caption class="sr-only">Delivery attempts</caption>
      <thead><tr><th scope="col">Time</th><th scope="col">Delivery id</th><th scope="col">Type</th><th scope="col">Attempt</th><th scope="col">HTTP status</th><th scope="col">Latency</th><th scope="col">Outcome</th><th scope="col">Error</th></tr></thead>
      <tbody>
        ${items.length === 0 && html`<tr><td colspan="8" class="muted">No delivery matches.</td></tr>`}
        ${items.map(
          (d) => html`<tr data-delivery=${d.deliveryId} data-outcome=${d.outcome}>
            <td data-label="Time"><${Time} value=${d.at} /></td>
            <td data-label="Delivery id"><button type="button" class="link" onClick=${() => showDelivery(d.deliveryId)} title="Show every attempt of this delivery"><code>${d.deliveryId}</code></button></td>
            <td data-label="Type">${d.type}</td>
            <td data-label="Attempt" class="num">${d.attempt}</td>
            <td data-label="HTTP status" class="num">${d.status || html`<span class="muted" title="no response">—</span>`}</td>
            <td data-label="Latency" class="num">${d.status || d.outcome === 'delivered' || d.outcome === 'retry' || d.outcome === 'failed' ? `${d.latencyMs} ms` : ''}</td>
            <td data-label="Outcome"><${Badge} value=${d.outcome} /></td>
            <td data-label="Error" class="small">${d.error || ''}</td>
          </tr>`,
        )}
      </tbody>
    </table></div>
    <div class="pager">
      <button type="button" disabled=${offset === 0} onClick=${() => setOffset(Math.max(0, offset - PAGE))}>Newer</button>
      <span>${items.length ? `${offset + 1}–${offset + items.length}` : '0'}</span>
      <button type="button" disabled=${!paging || !paging.more} onClick=${() => setOffset(offset + PAGE)}>Older</button>
    </div>`}
    <${Replay} onReplayed=${reload} defaultType=${filters.type} />
  </section>`;
}

// Replay re-sends the undelivered notifications of one type in a range
// (POST /registry/v1.1/deliveries/replay), then follows their delivery in
// the log until every one is delivered or five minutes passed.
function Replay({ onReplayed, defaultType }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const [run, setRun] = useState(null); // {type, replayed, since, delivered, done}
  const [range] = useState(() => {
    const now = Date.now();
    return { from: toLocalInput(new Date(now - 3600 * 1000)), to: toLocalInput(new Date(now + 60 * 1000)) };
  });
  const timer = useRef(null);
  useEffect(() => () => clearInterval(timer.current), []);

  const follow = (r) => {
    clearInterval(timer.current);
    const deadline = Date.now() + 5 * 60 * 1000;
    const tick = async () => {
      try {
        const { data } = await api('GET', '/registry/v1.1/deliveries', {
          query: { type: r.type, outcome: 'delivered', from: r.since, limit: 1000 },
          history: true,
        });
        const ids = new Set(data.items.map((d) => d.deliveryId));
        const delivered = Math.min(ids.size, r.replayed);
        const done = delivered >= r.replayed || Date.now() > deadline;
        setRun((cur) => (cur && cur.since === r.since ? { ...cur, delivered, done } : cur));
        if (done) {
          clearInterval(timer.current);
          onReplayed();
        }
      } catch (e) {
        setError(e);
        clearInterval(timer.current);
      }
    };
    timer.current = setInterval(tick, 2000);
    tick();
  };

  const submit = async (ev) => {
    ev.preventDefault();
    const f = ev.currentTarget;
    const type = f.querySelector('#r-type').value;
    const from = fromLocalInput(f.querySelector('#r-from').value);
    const to = fromLocalInput(f.querySelector('#r-to').value);
    const outcomes = REPLAYABLE.filter((o) => f.querySelector('#r-' + o).checked);
    const body = { type, from: from && from.toISOString(), to: to && to.toISOString() };
    if (outcomes.length) body.outcomes = outcomes;
    setBusy(true);
    setError(null);
    setRun(null);
    const since = new Date(Date.now() - 1000).toISOString();
    try {
      const { data } = await api('POST', '/registry/v1.1/deliveries/replay', { body, history: true });
      const r = { type, replayed: data.replayed, since, delivered: 0, done: data.replayed === 0 };
      setRun(r);
      if (r.replayed > 0) follow(r);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  return html`<form class="panel" onSubmit=${submit} aria-labelledby="replay-title" data-form="replay">
    <h2 id="replay-title">Replay a range</h2>
    <p class="muted">Sends again, under their own delivery ids, the notifications of one type created in the range that were never delivered (suppressed, failed or dropped). At most 31 days per replay.</p>
    <div class="grid">
      <${Field} id="r-type" label="Type"><select id="r-type" required>${TYPES.map((t) => html`<option value=${t} selected=${defaultType === t}>${t}</option>`)}</select><//>
      <${Field} id="r-from" label="From"><input id="r-from" type="datetime-local" defaultValue=${range.from} required /><//>
      <${Field} id="r-to" label="To"><input id="r-to" type="datetime-local" defaultValue=${range.to} required /><//>
      <fieldset><legend>Outcomes</legend>${REPLAYABLE.map((o) => html`<label class="check"><input type="checkbox" id=${'r-' + o} defaultChecked /> ${o}</label>`)}</fieldset>
    </div>
    <div class="buttons"><button type="submit" class="primary" disabled=${busy}>${busy ? 'Replaying…' : 'Replay'}</button></div>
    ${busy && html`<${Progress} label="Finding the undelivered notifications and queueing them…" />`}
    ${run &&
    run.replayed === 0 &&
    html`<p class="notice" role="status" data-replay="none">Nothing to replay: no suppressed, failed or dropped ${run.type} notification in that range.</p>`}
    ${run &&
    run.replayed > 0 &&
    html`<div data-replay=${run.done ? 'done' : 'running'}>
      <${Progress} label=${`${run.replayed} ${run.type} notification${run.replayed === 1 ? '' : 's'} queued; delivered since: ${run.delivered}`} value=${run.delivered} max=${run.replayed} />
      ${run.done &&
      html`<p class=${run.delivered >= run.replayed ? 'ok' : 'notice'} role="status">
        ${run.delivered >= run.replayed ? `All ${run.replayed} delivered.` : `${run.delivered} of ${run.replayed} delivered after 5 minutes; the rest are retried on the usual schedule.`}
      </p>`}
    </div>`}
    <${ErrorBox} error=${error} title="The replay failed" />
  </form>`;
}

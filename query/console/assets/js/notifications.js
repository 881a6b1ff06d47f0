// Change notifications (spec doc 3): ask the service to refresh a product
// from the supplier's system, and follow the request WAITING -> WORKING ->
// SUCCEEDED (or FAILED, PARTIAL_FAILURE); the list of recent requests.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, enc } from './api.js';
import { Badge, Busy, ErrorBox, Field, Heading, html, Progress, Time, useLoad, usePoll } from './ui.js';

const STATUSES = ['WAITING', 'WORKING', 'SUCCEEDED', 'FAILED', 'PARTIAL_FAILURE'];
const FINAL = ['SUCCEEDED', 'FAILED', 'PARTIAL_FAILURE'];

export function Notifications() {
  const [status, setStatus] = useState('');
  const [list, reload] = useLoad(async () => (await api('GET', '/operator/v2/notifications', { query: { limit: 50, status } })).data.notifications || [], [status]);
  const pending = (list.data || []).some((n) => !FINAL.includes(n.status));
  usePoll(reload, 3000, pending);
  return html`<section class="view">
    <${Heading}>Change notifications<//>
    <p class="lead">Ask the service to refresh a product (and its availability) from the supplier's system now, rather than at the next full synchronization. Requests are worked first in, first out.</p>
    <${CreateNotification} onCreated=${reload} />
    <h2>Recent requests</h2>
    <form class="filters" onSubmit=${(e) => e.preventDefault()} aria-label="Filter">
      <${Field} id="n-status" label="Status"><select id="n-status" onChange=${(e) => setStatus(e.currentTarget.value)}><option value="">any</option>${STATUSES.map((s) => html`<option value=${s} selected=${s === status}>${s}</option>`)}</select><//>
      <div class="buttons"><button type="button" onClick=${() => reload()}>Refresh</button></div>
    </form>
    <${ErrorBox} error=${list.error} />
    ${list.loading && !list.data && html`<${Busy} />`}
    ${list.data &&
    html`<div class="table-wrap"><table class="notifications stack">
      <thead><tr><th scope="col">Requested</th><th scope="col">Supplier / product</th><th scope="col">Mode</th><th scope="col">Status</th><th scope="col">Began</th><th scope="col">Finished</th><th scope="col">Window</th></tr></thead>
      <tbody>
        ${list.data.length === 0 && html`<tr><td colspan="7" class="muted">No request.</td></tr>`}
        ${list.data.map(
          (n) => html`<tr data-request=${n.id} data-status=${n.status}>
            <td data-label="Requested"><${Time} value=${n.inserted} /><div class="muted small"><code>${n.id}</code></div></td>
            <td data-label="Supplier / product"><code>${n.createRequest.supplierId}</code> / <code>${n.createRequest.productId}</code></td>
            <td data-label="Mode">${n.mode}</td>
            <td data-label="Status"><${Badge} value=${n.status} />${n.errors && n.errors.length > 0 && html`<ul class="small errors">${n.errors.map((e) => html`<li>${e}</li>`)}</ul>`}</td>
            <td data-label="Began"><${Time} value=${n.beganWorking} ms /></td>
            <td data-label="Finished"><${Time} value=${n.finishedWorking} ms /></td>
            <td data-label="Window" class="small">${n.startDate} → ${n.endDate}</td>
          </tr>`,
        )}
      </tbody>
    </table></div>`}
  </section>`;
}

function CreateNotification({ onCreated }) {
  const [sups] = useLoad(async () => (await api('GET', '/channel/v1.2/suppliers')).data.suppliers || [], []);
  const [sid, setSid] = useState('');
  useEffect(() => {
    // Functional update: a supplier chosen before this effect ran wins.
    if (sups.data && sups.data.length) setSid((cur) => cur || sups.data[0].id);
  }, [sups.data]);
  const [prods] = useLoad(async () => (sid ? (await api('GET', `/channel/v1.2/suppliers/${enc(sid)}/products`)).data.products || [] : []), [sid]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const [tracked, setTracked] = useState(null);

  const submit = async (ev) => {
    ev.preventDefault();
    const f = ev.currentTarget;
    const v = (id) => f.querySelector('#' + id).value;
    const mode = v('cn-mode');
    const query = { supplierId: v('cn-supplier'), productId: v('cn-product'), startDate: v('cn-start'), endDate: v('cn-end') };
    setBusy(true);
    setError(null);
    try {
      const path = mode === 'price-schedule' ? '/operator/v2/notifications/price-schedule' : '/operator/v2/notifications';
      const { data } = await api('POST', path, { query });
      setTracked(data.notification);
      onCreated();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return html`<div>
    <form class="panel" onSubmit=${submit} aria-labelledby="cn-title" data-form="notification">
      <h2 id="cn-title">Raise a change notification</h2>
      <div class="grid">
        <${Field} id="cn-supplier" label="Supplier"><select id="cn-supplier" onChange=${(e) => setSid(e.currentTarget.value)}>${(sups.data || []).map((s) => html`<option value=${s.id} selected=${s.id === sid}>${s.name} (${s.id})</option>`)}</select><//>
        <${Field} id="cn-product" label="Product"><select id="cn-product">${(prods.data || []).map((p) => html`<option value=${p.id}>${p.name} (${p.id})</option>`)}</select><//>
        <${Field} id="cn-mode" label="Mode"><select id="cn-mode"><option value="standard">standard (product and availability)</option><option value="price-schedule">price-schedule</option></select><//>
        <${Field} id="cn-start" label="startDate (optional)" hint="With endDate, or neither: YYYY-MM-DD, end exclusive."><input id="cn-start" type="date" /><//>
        <${Field} id="cn-end" label="endDate (optional)"><input id="cn-end" type="date" /><//>
      </div>
      <div class="buttons"><button type="submit" class="primary" disabled=${busy}>${busy ? 'Sending…' : 'Raise it'}</button></div>
      <${ErrorBox} error=${sups.error || prods.error} />
      <${ErrorBox} error=${error} title="The change notification was refused" />
    </form>
    ${tracked && html`<${Tracker} key=${tracked.id} first=${tracked} onFinished=${onCreated} />`}
  </div>`;
}

// Tracker follows one request until it is final, showing every status it
// saw and the service's timestamps.
function Tracker({ first, onFinished }) {
  const [n, setN] = useState(first);
  const [seen, setSeen] = useState([{ status: first.status, at: Date.now() }]);
  const [error, setError] = useState(null);
  const done = FINAL.includes(n.status);
  const last = useRef(first.status);
  usePoll(
    async () => {
      try {
        const { data } = await api('GET', `/operator/v2/notifications/${enc(first.id)}`);
        const cur = data.notification;
        setN(cur);
        if (cur.status !== last.current) {
          last.current = cur.status;
          setSeen((s) => [...s, { status: cur.status, at: Date.now() }]);
          if (FINAL.includes(cur.status)) onFinished();
        }
      } catch (e) {
        setError(e);
      }
    },
    1000,
    !done && !error,
  );
  const step = n.status === 'WAITING' ? 1 : n.status === 'WORKING' ? 2 : 3;
  return html`<div class="panel tracker" data-tracker=${n.id} data-status=${n.status} data-seen=${seen.map((s) => s.status).join(',')} aria-live="polite">
    <h2>Request <code>${n.id}</code></h2>
    <p><code>${n.createRequest.supplierId}</code> / <code>${n.createRequest.productId}</code>, ${n.mode}, ${n.startDate} → ${n.endDate}</p>
    <${Progress} label=${done ? `Finished: ${n.status}` : `${n.status}…`} value=${step} max=${3} />
    <ol class="steps">
      ${seen.map((s) => html`<li><${Badge} value=${s.status} /> seen at <${Time} value=${s.at} ms /></li>`)}
    </ol>
    <dl class="timestamps">
      <dt>inserted</dt><dd><${Time} value=${n.inserted} ms /></dd>
      <dt>beganWorking</dt><dd><${Time} value=${n.beganWorking} ms /></dd>
      <dt>finishedWorking</dt><dd><${Time} value=${n.finishedWorking} ms /></dd>
    </dl>
    ${n.errors && n.errors.length > 0 && html`<ul class="errors">${n.errors.map((e) => html`<li>${e}</li>`)}</ul>`}
    <${ErrorBox} error=${error} title="Following the request failed" />
  </div>`;
}

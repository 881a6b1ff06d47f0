// Suppliers: the operator's suppliers with how they are connected (partner
// or booking system, address, credentials), the state of that connection
// and their last synchronization, from the cron reports, the change
// notifications and the history of calls to their systems.
import { api, ApiError } from './api.js';
import { ago, Badge, Busy, ErrorBox, Heading, html, Time, useLoad } from './ui.js';

const FINISHED = ['SUCCEEDED', 'FAILED', 'PARTIAL_FAILURE'];

async function loadSuppliers() {
  const { data } = await api('GET', '/channel/v1.2/suppliers');
  const [crons, notes] = await Promise.all([
    api('GET', '/operator/v2/cron/reports', { query: { limit: 1000 } }).then((r) => r.data || []),
    api('GET', '/operator/v2/notifications', { query: { limit: 500 } }).then((r) => r.data.notifications || []),
  ]);
  const out = [];
  for (const s of data.suppliers || []) {
    let calls = null;
    let callsError = null;
    try {
      calls = (await api('GET', '/operator/v2/history/connections', { query: { supplierId: s.id }, history: true })).data.connection;
    } catch (e) {
      callsError = e;
    }
    const cron = crons.filter((c) => c.externalSystemID === s.id).sort((a, b) => Date.parse(b.inserted) - Date.parse(a.inserted))[0] || null;
    const refresh =
      notes
        .filter((n) => n.createRequest.supplierId === s.id && FINISHED.includes(n.status))
        .sort((a, b) => Date.parse(b.finishedWorking) - Date.parse(a.finishedWorking))[0] || null;
    out.push({ ...s, cron, refresh, calls, callsError });
  }
  return out;
}

// connectionState sums up how the service reaches a supplier's system:
// ok, degraded, failing or unknown, with the reason. A failed last call
// comes first; then the newest synchronization (full or change
// notification) decides; then the calls of the last day.
export function connectionState(s) {
  const c = s.connection || {};
  if (!c.baseUrl) return ['unknown', 'no connection: its data comes through the operator API only'];
  const calls = s.calls;
  if (calls && calls.last && calls.last.outcome !== 'ok') {
    const l = calls.last;
    return ['failing', `its last call (${l.operation}, ${ago(l.at)}) ended ${l.outcome}${l.status ? ' ' + l.status : ''}${l.error ? ': ' + l.error : ''}`];
  }
  if (calls && calls.calls > calls.ok) return ['degraded', `${calls.calls - calls.ok} of ${calls.calls} calls failed in the last day; the last one answered`];
  const lastCron = s.cron ? Date.parse(s.cron.inserted) : 0;
  const lastRefresh = s.refresh ? Date.parse(s.refresh.finishedWorking) : 0;
  if (s.cron && lastCron >= lastRefresh) {
    return s.cron.errorCount > 0
      ? ['degraded', `its last full synchronization (${ago(s.cron.inserted)}) reported ${s.cron.errorCount} error(s): see cron report #${s.cron.id}`]
      : ['ok', `its last full synchronization (${ago(s.cron.inserted)}) had no error`];
  }
  if (s.refresh) {
    return s.refresh.status === 'SUCCEEDED'
      ? ['ok', `its last change notification (${ago(s.refresh.finishedWorking)}) succeeded`]
      : ['failing', `its last change notification (${ago(s.refresh.finishedWorking)}) ended ${s.refresh.status}`];
  }
  if (calls && calls.last) return ['ok', `its last call (${calls.last.operation}, ${ago(calls.last.at)}) answered ${calls.last.status}`];
  return ['unknown', 'no synchronization and no call yet'];
}

// lastSync is the newest of a supplier's full synchronization, change
// notification and successful call to its partner.
function lastSync(s) {
  return [
    s.cron && { at: s.cron.inserted, what: `full synchronization, cron report #${s.cron.id}` },
    s.refresh && { at: s.refresh.finishedWorking, what: `change notification ${s.refresh.status}` },
    s.calls && s.calls.lastOkAt && { at: s.calls.lastOkAt, what: 'availability read from its partner' },
  ]
    .filter(Boolean)
    .sort((a, b) => Date.parse(b.at) - Date.parse(a.at))[0];
}

function callsText(s) {
  const c = s.calls;
  if (!c) return html`<span class="muted">${s.callsError instanceof ApiError && s.callsError.status === 503 ? 'history unavailable' : '—'}</span>`;
  if (c.calls === 0) return html`<span class="muted">none recorded</span>`;
  const parts = [`${c.calls} call(s)`, `${c.ok} ok`];
  if (c.errors) parts.push(`${c.errors} error(s)`);
  if (c.timeouts) parts.push(`${c.timeouts} timeout(s)`);
  if (c.breakerOpen) parts.push(`${c.breakerOpen} refused (breaker open)`);
  return html`${parts.join(', ')}${c.lastFailure && html`<div class="muted">last failure <${Time} value=${c.lastFailure.at} />: ${c.lastFailure.error || c.lastFailure.outcome}</div>`}`;
}

export function Suppliers() {
  const [state, reload] = useLoad(loadSuppliers, []);
  const sups = state.data || [];
  return html`<section class="view">
    <${Heading}>Suppliers<//>
    <p class="lead">Your suppliers, how the service reaches their systems, and how that went lately.</p>
    <div class="buttons"><button type="button" onClick=${() => reload()}>Refresh</button></div>
    ${state.loading && html`<${Busy} label="Reading suppliers, reports and calls…" />`}
    <${ErrorBox} error=${state.error} />
    ${state.data && sups.length === 0 && html`<p class="notice">No supplier yet (POST /channel/v1.2/suppliers creates one).</p>`}
    ${state.data &&
    sups.length > 0 &&
    html`<div class="table-wrap"><table class="suppliers stack">
      <thead><tr><th scope="col">Supplier</th><th scope="col">Connection</th><th scope="col">State</th><th scope="col">Last synchronization</th><th scope="col">Calls (24 h)</th></tr></thead>
      <tbody>
        ${sups.map((s) => {
          const [st, why] = connectionState(s);
          const c = s.connection || {};
          const last = lastSync(s);
          return html`<tr data-supplier=${s.id} data-state=${st}>
            <th scope="row">${s.name}<div class="muted small"><code>${s.id}</code></div></th>
            <td data-label="Connection">${c.kind || 'none'}${c.baseUrl && html`<div class="small"><code>${c.baseUrl}</code></div>`}<div class="muted small">credentials ${c.credentials && c.credentials.set ? `set (${c.credentials.kind})` : 'not set'}</div></td>
            <td data-label="State"><${Badge} value=${st} /><div class="small">${why}</div></td>
            <td data-label="Last sync">${last ? html`<${Time} value=${last.at} /><div class="small">${last.what}</div>` : html`<span class="muted">never</span>`}</td>
            <td data-label="Calls (24 h)" class="small">${callsText(s)}</td>
          </tr>`;
        })}
      </tbody>
    </table></div>`}
    <p class="muted small">Booking-system suppliers are synchronized in full on a schedule (see the cron reports) and on change notifications; partner suppliers are called when their cached availability is stale.</p>
  </section>`;
}


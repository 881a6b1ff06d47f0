// Cron reports (spec doc 3): the outcome of each scheduled full
// synchronization of the operator's booking-system suppliers (the past 60
// days), and a report's errors.
import { useState } from 'preact/hooks';
import { api } from './api.js';
import { Badge, Busy, ErrorBox, Field, Heading, html, Time, useLoad } from './ui.js';

export function CronReports() {
  const [supplier, setSupplier] = useState('');
  const [list, reload] = useLoad(async () => (await api('GET', '/operator/v2/cron/reports', { query: { limit: 100, externalSystemID: supplier } })).data || [], [supplier]);
  const [open, setOpen] = useState(null);
  const filter = (ev) => {
    ev.preventDefault();
    setSupplier(ev.currentTarget.querySelector('#cr-supplier').value.trim());
  };
  return html`<section class="view">
    <${Heading}>Cron reports<//>
    <p class="lead">Each scheduled full synchronization of a booking-system supplier leaves a report: what it read, and every error it met.</p>
    <form class="filters" onSubmit=${filter} aria-label="Filter">
      <${Field} id="cr-supplier" label="Supplier id (externalSystemID)"><input id="cr-supplier" spellcheck="false" /><//>
      <div class="buttons"><button type="submit" class="primary">Filter</button><button type="button" onClick=${() => reload()}>Refresh</button></div>
    </form>
    <${ErrorBox} error=${list.error} />
    ${list.loading && !list.data && html`<${Busy} />`}
    ${list.data &&
    html`<div class="table-wrap"><table class="cron stack">
      <thead><tr><th scope="col">Report</th><th scope="col">Inserted</th><th scope="col">Supplier</th><th scope="col">Errors</th><th scope="col"></th></tr></thead>
      <tbody>
        ${list.data.length === 0 && html`<tr><td colspan="5" class="muted">No report in the past 60 days.</td></tr>`}
        ${list.data.map(
          (r) => html`<tr data-report=${r.id} data-errors=${r.errorCount}>
            <td data-label="Report">#${r.id}</td>
            <td data-label="Inserted"><${Time} value=${r.inserted} /></td>
            <td data-label="Supplier"><code>${r.externalSystemID}</code></td>
            <td data-label="Errors">${r.errorCount === 0 ? html`<${Badge} value="ok" />` : html`<${Badge} value="errors" /> ${r.errorCount}`}</td>
            <td><button type="button" class="small" onClick=${() => setOpen(r.id)} aria-expanded=${open === r.id}>Open</button></td>
          </tr>`,
        )}
      </tbody>
    </table></div>`}
    ${open !== null && html`<${Report} key=${open} id=${open} onClose=${() => setOpen(null)} />`}
  </section>`;
}

function Report({ id, onClose }) {
  const [rep] = useLoad(async () => (await api('GET', `/operator/v2/cron/reports/${id}`)).data, [id]);
  const r = rep.data;
  return html`<div class="panel" data-report-detail=${id} role="region" aria-labelledby="report-title">
    <h2 id="report-title">Report #${id}</h2>
    ${rep.loading && html`<${Busy} />`}
    <${ErrorBox} error=${rep.error} />
    ${r &&
    html`<p>Supplier <code>${r.externalSystemID}</code>, inserted <${Time} value=${r.inserted} />: ${r.errorCount === 0 ? 'no error.' : `${r.errorCount} error(s).`}</p>
      ${r.errorReport &&
      r.errorReport.length > 0 &&
      html`<div class="table-wrap"><table class="error-report">
        <thead><tr><th scope="col">Entity</th><th scope="col">Id</th><th scope="col">Message</th></tr></thead>
        <tbody>${r.errorReport.map((e) => html`<tr><td>${e.entity || ''}</td><td><code>${e.id || ''}</code></td><td>${e.message}</td></tr>`)}</tbody>
      </table></div>`}`}
    <div class="buttons"><button type="button" onClick=${onClose}>Close</button></div>
  </div>`;
}

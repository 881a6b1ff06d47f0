// Rules: the subscriber's notification rule of every type (spec doc 1,
// registry v1.1): create, edit, disable or enable, delete, and send a test
// notification with the subscriber's answer.
import { useState } from 'preact/hooks';
import { api, crudPath, testPath, TYPES } from './api.js';
import { Badge, Busy, CopyButton, ErrorBox, Field, Heading, html, splitIds, Time, useLoad } from './ui.js';

// What a rule of each type may hold (docs/decisions.md, "Rules and their
// config").
export const SPECS = {
  channelbinding: { ops: ['created', 'removed', 'updated'], ids: ['supplierIDs', 'productIDs'] },
  supplier: { ops: ['updated'], ids: ['supplierIDs'] },
  product: { ops: ['updated'], ids: ['supplierIDs', 'productIDs'] },
  rate: { ops: ['updated'], ids: ['supplierIDs', 'productIDs', 'rateIDs'] },
  availability: { ids: ['supplierIDs', 'productIDs', 'rateIDs'], lookAhead: true, vacancies: true },
  priceschedule: { ids: ['supplierIDs', 'productIDs', 'rateIDs'], lookAhead: true },
  booking: { ops: ['canceled', 'tickets-added'], ids: ['supplierIDs', 'productIDs', 'rateIDs'] },
};

// The fields of each type's test body, and the operations a test may send.
const TEST_FIELDS = {
  channelbinding: ['supplierID', 'productID', 'operation'],
  supplier: ['supplierID', 'operation'],
  product: ['supplierID', 'productID', 'operation'],
  rate: ['supplierID', 'productID', 'rateID', 'operation'],
  availability: ['supplierID', 'productID', 'rateID', 'start', 'end'],
  priceschedule: ['supplierID', 'productID', 'start', 'end'],
  booking: ['bookingID', 'startTime', 'resellerBookingReference', 'operation'],
};
const TEST_OPS = { channelbinding: ['created', 'removed', 'updated'], supplier: ['updated'], product: ['updated'], rate: ['updated'], booking: ['canceled'] };

export async function loadRules() {
  const lists = await Promise.all(TYPES.map((t) => api('GET', crudPath(t))));
  const out = {};
  TYPES.forEach((t, i) => {
    const data = lists[i].data;
    out[t] = Array.isArray(data) && data.length > 0 ? data[0] : null;
  });
  return out;
}

export function Rules() {
  const [state, reload] = useLoad(loadRules, []);
  // panel: {kind: 'edit'|'create'|'test'|'delete', type}
  const [panel, setPanel] = useState(null);
  const [toggling, setToggling] = useState('');
  const [toggleError, setToggleError] = useState(null);
  const rules = state.data || {};

  const toggle = async (t) => {
    const r = rules[t];
    setToggling(t);
    setToggleError(null);
    try {
      // PUT replaces the rule: send it whole, with the switch flipped.
      await api('PUT', crudPath(t), { body: { id: r.id, url: r.url, disabled: !r.disabled, config: r.config } });
      await reload();
    } catch (e) {
      setToggleError(e);
    } finally {
      setToggling('');
    }
  };
  const done = async () => {
    setPanel(null);
    await reload();
  };

  return html`<section class="view">
    <${Heading}>Rules<//>
    <p class="lead">One rule per notification type: where its webhooks go, which changes it wants, and the key that signs them.</p>
    ${state.loading && !state.data && html`<${Busy} label="Loading the rules…" />`}
    <${ErrorBox} error=${state.error} />
    <${ErrorBox} error=${toggleError} title="Could not switch the rule" />
    ${state.data &&
    html`<div class="table-wrap"><table class="rules stack">
      <caption class="sr-only">Notification rules by type</caption>
      <thead><tr><th scope="col">Type</th><th scope="col">Webhook URL</th><th scope="col">State</th><th scope="col">Updated</th><th scope="col">Security key</th><th scope="col">Actions</th></tr></thead>
      <tbody>
        ${TYPES.map((t) => {
          const r = rules[t];
          return html`<tr data-type=${t}>
            <th scope="row">${t}</th>
            ${r
              ? html`<td data-label="Webhook URL" class="url"><code>${r.url}</code><div class="muted small">id <code class="rule-id">${r.id}</code></div></td>
                  <td data-label="State"><${Badge} value=${r.disabled ? 'disabled' : 'enabled'} /></td>
                  <td data-label="Updated"><${Time} value=${r.updatedOn} /></td>
                  <td data-label="Security key"><${SecretKey} value=${r.securityKey} type=${t} /></td>
                  <td class="actions">
                    <button type="button" onClick=${() => setPanel({ kind: 'test', type: t })}>Send test</button>
                    <button type="button" onClick=${() => setPanel({ kind: 'edit', type: t })}>Edit</button>
                    <button type="button" onClick=${() => toggle(t)} disabled=${toggling === t}>${r.disabled ? 'Enable' : 'Disable'}</button>
                    <button type="button" class="danger" onClick=${() => setPanel({ kind: 'delete', type: t })}>Delete</button>
                  </td>`
              : html`<td colspan="4" class="muted">No rule: nothing of this type is sent.</td>
                  <td class="actions"><button type="button" onClick=${() => setPanel({ kind: 'create', type: t })}>Create</button></td>`}
          </tr>`;
        })}
      </tbody>
    </table></div>`}
    ${panel && (panel.kind === 'create' || panel.kind === 'edit') && html`<${RuleForm} key=${panel.kind + panel.type} type=${panel.type} rule=${panel.kind === 'edit' ? rules[panel.type] : null} onDone=${done} onCancel=${() => setPanel(null)} />`}
    ${panel && panel.kind === 'test' && rules[panel.type] && html`<${TestForm} key=${'test' + panel.type} type=${panel.type} rule=${rules[panel.type]} onClose=${() => setPanel(null)} />`}
    ${panel && panel.kind === 'delete' && rules[panel.type] && html`<${DeleteRule} type=${panel.type} rule=${rules[panel.type]} onDone=${done} onCancel=${() => setPanel(null)} />`}
  </section>`;
}

function SecretKey({ value, type }) {
  const [shown, setShown] = useState(false);
  return html`<span class="secret-key">
    <code class=${shown ? 'key-shown' : 'key-hidden'} aria-label=${shown ? `security key of the ${type} rule` : 'hidden'}>${shown ? value : '••••••••'}</code>
    <button type="button" class="small" onClick=${() => setShown(!shown)} aria-pressed=${shown}>${shown ? 'Hide' : 'Show'}</button>
    <${CopyButton} text=${value} label="Copy" />
  </span>`;
}

function RuleForm({ type, rule, onDone, onCancel }) {
  const spec = SPECS[type];
  const cfg = (rule && rule.config) || {};
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const id = (f) => `rule-${type}-${f}`;
  const submit = async (ev) => {
    ev.preventDefault();
    const f = ev.currentTarget;
    const val = (name) => f.querySelector('#' + id(name))?.value;
    const config = {};
    if (spec.ops) config.operations = spec.ops.filter((op) => f.querySelector('#' + id('op-' + op)).checked);
    for (const k of spec.ids) config[k] = splitIds(val(k));
    if (spec.lookAhead && val('maxLookAheadDays') !== '') config.maxLookAheadDays = Number(val('maxLookAheadDays'));
    if (spec.vacancies && val('vacanciesUnder') !== '') config.vacanciesUnder = Number(val('vacanciesUnder'));
    const body = { url: val('url').trim(), disabled: f.querySelector('#' + id('disabled')).checked, config };
    if (rule) body.id = rule.id;
    else if (val('id').trim()) body.id = val('id').trim();
    setBusy(true);
    setError(null);
    try {
      await api(rule ? 'PUT' : 'POST', crudPath(type), { body });
      await onDone();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="panel" onSubmit=${submit} aria-labelledby=${id('title')} data-form="rule">
    <h2 id=${id('title')}>${rule ? 'Edit' : 'Create'} the ${type} rule</h2>
    ${!rule && html`<${Field} id=${id('id')} label="Rule id (optional: generated when empty)"><input id=${id('id')} /><//>`}
    <${Field} id=${id('url')} label="Webhook URL" hint="Where the service POSTs this type's notifications."><input id=${id('url')} defaultValue=${rule ? rule.url : ''} required spellcheck="false" inputmode="url" /><//>
    ${spec.ops &&
    html`<fieldset><legend>Operations</legend>
      ${spec.ops.map((op) => html`<label class="check"><input type="checkbox" id=${id('op-' + op)} defaultChecked=${!rule || (cfg.operations || []).includes(op)} /> ${op}</label>`)}
    </fieldset>`}
    ${spec.ids.map(
      (k) => html`<${Field} id=${id(k)} label=${k} hint="Ids separated by commas or spaces; empty means everything your channel sees.">
        <textarea id=${id(k)} rows="2" spellcheck="false" defaultValue=${(cfg[k] || []).join(', ')}></textarea><//>`,
    )}
    ${spec.lookAhead && html`<${Field} id=${id('maxLookAheadDays')} label="maxLookAheadDays" hint="Days ahead to watch, 1 to 365 (default 7)."><input id=${id('maxLookAheadDays')} type="number" defaultValue=${cfg.maxLookAheadDays ?? ''} /><//>`}
    ${spec.vacancies && html`<${Field} id=${id('vacanciesUnder')} label="vacanciesUnder" hint="Notify when vacancies fall under this; 0 notifies every change."><input id=${id('vacanciesUnder')} type="number" defaultValue=${cfg.vacanciesUnder ?? ''} /><//>`}
    <label class="check"><input type="checkbox" id=${id('disabled')} defaultChecked=${rule ? rule.disabled : false} /> Disabled (no notification of this type is sent)</label>
    <div class="buttons">
      <button type="submit" class="primary" disabled=${busy}>${busy ? 'Saving…' : rule ? 'Save the rule' : 'Create the rule'}</button>
      <button type="button" onClick=${onCancel}>Cancel</button>
    </div>
    <${ErrorBox} error=${error} title="The rule was not saved" />
  </form>`;
}

function DeleteRule({ type, rule, onDone, onCancel }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const del = async () => {
    setBusy(true);
    try {
      await api('DELETE', `${crudPath(type)}/${encodeURIComponent(rule.id)}`);
      await onDone();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return html`<div class="panel" role="group" aria-labelledby="delete-title">
    <h2 id="delete-title">Delete the ${type} rule?</h2>
    <p>Nothing of this type will be sent to <code>${rule.url}</code> any more; a new rule gets a new id and a new key.</p>
    <div class="buttons">
      <button type="button" class="danger" onClick=${del} disabled=${busy}>${busy ? 'Deleting…' : 'Delete the rule'}</button>
      <button type="button" onClick=${onCancel}>Cancel</button>
    </div>
    <${ErrorBox} error=${error} title="The rule was not deleted" />
  </div>`;
}

function defaults(type) {
  const day = new Date(Date.now() + 24 * 3600 * 1000);
  day.setUTCMinutes(0, 0, 0);
  const end = new Date(day.getTime() + 3600 * 1000);
  const iso = (d) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
  return {
    supplierID: 'test-supplier',
    productID: 'test-product',
    rateID: 'test-rate',
    start: iso(day),
    end: iso(end),
    bookingID: 'test-booking',
    startTime: iso(day),
    resellerBookingReference: '',
    operation: (TEST_OPS[type] || [''])[0],
  };
}

function TestForm({ type, rule, onClose }) {
  const fields = TEST_FIELDS[type];
  const [def] = useState(() => defaults(type));
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState(null); // {ok, ms, error}
  const id = (f) => `test-${type}-${f}`;
  const send = async (ev) => {
    ev.preventDefault();
    const f = ev.currentTarget;
    const body = {};
    for (const name of fields) {
      const v = f.querySelector('#' + id(name)).value;
      if (name === 'resellerBookingReference' && v === '') continue;
      body[name] = v;
    }
    setBusy(true);
    setResult(null);
    const t0 = performance.now();
    try {
      await api('POST', testPath(type, rule.id), { body });
      setResult({ ok: true, ms: Math.round(performance.now() - t0) });
    } catch (e) {
      setResult({ ok: false, ms: Math.round(performance.now() - t0), error: e });
    } finally {
      setBusy(false);
    }
  };
  const delivery = result && result.error && result.error.data && result.error.data.deliveryId;
  return html`<form class="panel" onSubmit=${send} aria-labelledby=${id('title')} data-form="test">
    <h2 id=${id('title')}>Send a test ${type} notification</h2>
    <p class="muted">Signed with the rule's key and sent at once to <code>${rule.url}</code> (also when the rule is disabled); placeholders are fine.</p>
    <div class="grid">
      ${fields.map((name) =>
        name === 'operation'
          ? html`<${Field} id=${id(name)} label="operation"><select id=${id(name)}>${TEST_OPS[type].map((op) => html`<option value=${op}>${op}</option>`)}</select><//>`
          : html`<${Field} id=${id(name)} label=${name}><input id=${id(name)} defaultValue=${def[name]} spellcheck="false" /><//>`,
      )}
    </div>
    <div class="buttons">
      <button type="submit" class="primary" disabled=${busy}>${busy ? 'Sending…' : 'Send the test'}</button>
      <button type="button" onClick=${onClose}>Close</button>
    </div>
    ${busy && html`<${Busy} label="Waiting for the subscriber's answer…" />`}
    ${result &&
    result.ok &&
    html`<p class="ok" role="status" data-test-result="delivered">Delivered: the subscriber answered <strong>200</strong> (round trip ${result.ms} ms). It is in the <a href=${'#/deliveries?type=' + type}>deliveries</a>.</p>`}
    ${result &&
    !result.ok &&
    html`<div data-test-result="failed">
      <${ErrorBox} error=${result.error} title=${result.error.data && result.error.data.subscriberStatus ? `The subscriber answered ${result.error.data.subscriberStatus}` : 'The test was not delivered'} />
      ${delivery && html`<p><a href=${'#/deliveries?deliveryId=' + encodeURIComponent(delivery)}>See delivery ${delivery}</a>: a failed test can be replayed from the deliveries.</p>`}
    </div>`}
  </form>`;
}

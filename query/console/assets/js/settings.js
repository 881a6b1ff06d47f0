// Delivery settings: the subscriber's metadata (spec doc 1: throttleDelay,
// disableAll), and why disableAll is on when the service set it itself.
import { useState } from 'preact/hooks';
import { api, ApiError } from './api.js';
import { ago, Badge, Busy, ErrorBox, Field, Heading, html, Time, useLoad } from './ui.js';

// automatic tells whether the latest auto-disable event explains the
// current disableAll: it came at or after the metadata's last update
// (the dispatcher writes disableAll, then its event; 5 s of clock skew
// between instances is allowed).
export function automatic(md, events) {
  if (!md || !md.disableAll || !events || events.length === 0) return null;
  const last = events[0];
  if (!md.updatedOn || new Date(last.at).getTime() >= new Date(md.updatedOn).getTime() - 5000) return last;
  return null;
}

async function loadSettings() {
  const { data: md } = await api('GET', '/registry/v1.1/metadata');
  let events = null;
  let eventsError = null;
  try {
    const { data } = await api('GET', '/registry/v1.1/deliveries/auto-disables', { query: { limit: 5 }, history: true });
    events = data.items;
  } catch (e) {
    // History may be parked (no ClickHouse): the settings still work.
    eventsError = e;
  }
  return { md, events, eventsError };
}

export function Settings() {
  const [state, reload] = useLoad(loadSettings, []);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const [saved, setSaved] = useState('');
  const md = state.data && state.data.md;
  const events = state.data && state.data.events;
  const auto = automatic(md, events);

  const save = async (body, what) => {
    setBusy(true);
    setError(null);
    setSaved('');
    try {
      await api('PUT', '/registry/v1.1/metadata', { body });
      setSaved(what);
      await reload();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const submit = (ev) => {
    ev.preventDefault();
    save({ throttleDelay: ev.currentTarget.querySelector('#throttle').value.trim() }, 'throttleDelay saved');
  };

  return html`<section class="view">
    <${Heading}>Delivery settings<//>
    <p class="lead">Settings of every rule of this subscriber (the registry's metadata).</p>
    <div class="buttons"><button type="button" onClick=${() => reload()} data-action="refresh">Refresh</button></div>
    ${state.loading && !state.data && html`<${Busy} />`}
    <${ErrorBox} error=${state.error} />
    ${md &&
    html`<div class="cards">
      <div class="card" data-setting="disableAll">
        <h2>Delivery</h2>
        <p>disableAll: <${Badge} value=${md.disableAll ? 'disabled' : 'enabled'} /></p>
        ${md.disableAll
          ? html`<p>No notification is sent to any rule; what arrives meanwhile is recorded as <em>suppressed</em> and can be replayed from the deliveries.</p>`
          : html`<p>Notifications are sent to every enabled rule.</p>`}
        ${auto &&
        html`<div class="warning" role="status" data-auto-disabled="true">
          <strong>Set automatically <${Time} value=${auto.at} /> (${ago(auto.at)})</strong>
          <p>${auto.reason || `the subscriber kept failing while its backlog reached the bound${auto.limit ? ` (${auto.backlog} of ${auto.limit})` : ''}`}</p>
          <p class="small">Fix the endpoint, turn delivery back on, then replay what was suppressed.</p>
        </div>`}
        ${!auto && md.disableAll && events && events.length > 0 && html`<p class="muted small">The last automatic disable was <${Time} value=${events[0].at} />: ${events[0].reason}. disableAll was set again since.</p>`}
        <button type="button" class=${md.disableAll ? 'primary' : 'danger'} disabled=${busy} onClick=${() => save({ disableAll: !md.disableAll }, md.disableAll ? 'delivery turned on' : 'delivery turned off')}>
          ${md.disableAll ? 'Turn delivery on (disableAll = false)' : 'Turn delivery off (disableAll = true)'}
        </button>
      </div>
      <form class="card" onSubmit=${submit} data-setting="throttleDelay">
        <h2>Throttle</h2>
        <${Field} id="throttle" label="throttleDelay" hint="The least time between two POSTs to you, such as 250ms or 1.5s; 0s for none.">
          <input id="throttle" defaultValue=${md.throttleDelay} spellcheck="false" />
        <//>
        <button type="submit" disabled=${busy}>Save the throttle</button>
      </form>
    </div>
    <p class="muted small">Created <${Time} value=${md.createdOn} /> · updated <${Time} value=${md.updatedOn} /></p>`}
    ${saved && html`<p class="ok" role="status">${saved}.</p>`}
    <${ErrorBox} error=${error} title="The settings were not saved" />
    ${state.data && state.data.eventsError && state.data.eventsError instanceof ApiError && html`<p class="muted small">Automatic disables cannot be read: ${state.data.eventsError.message}</p>`}
  </section>`;
}

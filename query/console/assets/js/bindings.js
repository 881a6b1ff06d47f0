// Products and bindings: a product's rates (its options) and, for every
// sales channel, which of them are bound (operator API v2, spec doc 3:
// PUT replaces the channel's set of options, DELETE unbinds the product).
import { useEffect, useState } from 'preact/hooks';
import { api, enc } from './api.js';
import { Busy, ErrorBox, Field, Heading, html, useLoad } from './ui.js';

export function Bindings({ params }) {
  const [sups] = useLoad(async () => (await api('GET', '/channel/v1.2/suppliers')).data.suppliers || [], []);
  const [sid, setSid] = useState(params.get('supplier') || '');
  const [pid, setPid] = useState(params.get('product') || '');
  // Functional updates: the effect runs after paint, so a choice the user
  // made in between must win over this default (a stale closure's sid would
  // put the first supplier back).
  useEffect(() => {
    if (sups.data && sups.data.length) setSid((cur) => cur || sups.data[0].id);
  }, [sups.data]);
  const [prods] = useLoad(async () => (sid ? (await api('GET', `/channel/v1.2/suppliers/${enc(sid)}/products`)).data.products || [] : []), [sid]);
  useEffect(() => {
    if (prods.data) setPid((cur) => (prods.data.some((p) => p.id === cur) ? cur : prods.data.length ? prods.data[0].id : ''));
  }, [prods.data]);

  return html`<section class="view">
    <${Heading}>Products and bindings<//>
    <p class="lead">Bind a product's rates to a sales channel: its resellers then see and sell them, and their channelbinding rules are notified.</p>
    <form class="filters" onSubmit=${(e) => e.preventDefault()} aria-label="Product">
      <${Field} id="b-supplier" label="Supplier">
        <select id="b-supplier" onChange=${(e) => setSid(e.currentTarget.value)}>${(sups.data || []).map((s) => html`<option value=${s.id} selected=${s.id === sid}>${s.name} (${s.id})</option>`)}</select>
      <//>
      <${Field} id="b-product" label="Product">
        <select id="b-product" onChange=${(e) => setPid(e.currentTarget.value)}>${(prods.data || []).map((p) => html`<option value=${p.id} selected=${p.id === pid}>${p.name} (${p.id})</option>`)}</select>
      <//>
    </form>
    <${ErrorBox} error=${sups.error || prods.error} />
    ${(sups.loading || prods.loading) && html`<${Busy} />`}
    ${sid && pid && html`<${ProductBindings} key=${sid + '/' + pid} sid=${sid} pid=${pid} />`}
  </section>`;
}

function ProductBindings({ sid, pid }) {
  const base = `/operator/v2/suppliers/${enc(sid)}/products/${enc(pid)}/bindings`;
  const [state, reload] = useLoad(async () => {
    const [rates, channels, bindings] = await Promise.all([
      api('GET', `/channel/v1.2/suppliers/${enc(sid)}/products/${enc(pid)}/rates`).then((r) => r.data.rates || []),
      api('GET', '/operator/v2/channels').then((r) => r.data.channels || []),
      api('GET', base).then((r) => r.data.bindings || []),
    ]);
    return { rates, channels, bindings };
  }, [sid, pid]);
  if (state.loading && !state.data) return html`<${Busy} label="Reading rates, channels and bindings…" />`;
  if (!state.data) return html`<${ErrorBox} error=${state.error} />`;
  const { rates, channels, bindings } = state.data;
  const options = rates.map((r) => ({ id: r.optionId || r.id, name: r.name || r.title || r.id }));
  return html`<div>
    <${ErrorBox} error=${state.error} />
    <div class="table-wrap"><table class="bindings">
      <caption>Bindings of <code>${pid}</code> by channel</caption>
      <thead><tr><th scope="col">Channel</th><th scope="col">Bound options (rates)</th><th scope="col">Actions</th></tr></thead>
      <tbody>
        ${channels.map((c) => html`<${ChannelRow} key=${c.id} base=${base} channel=${c} options=${options} binding=${bindings.find((b) => b.channelId === c.id)} onChanged=${reload} />`)}
      </tbody>
    </table></div>
    ${channels.length === 0 && html`<p class="notice">No sales channel exists yet (an admin creates them).</p>`}
  </div>`;
}

function ChannelRow({ base, channel, options, binding, onChanged }) {
  const bound = binding ? binding.optionIds : [];
  const [picked, setPicked] = useState(() => new Set(bound.length ? bound : []));
  const [busy, setBusy] = useState('');
  const [error, setError] = useState(null);
  const [done, setDone] = useState('');
  useEffect(() => setPicked(new Set(bound)), [bound.join(',')]);
  const flip = (id) => {
    const n = new Set(picked);
    n.has(id) ? n.delete(id) : n.add(id);
    setPicked(n);
  };
  const act = async (what) => {
    setBusy(what);
    setError(null);
    setDone('');
    try {
      if (what === 'bind') {
        const optionIds = options.map((o) => o.id).filter((id) => picked.has(id));
        await api('PUT', `${base}/${enc(channel.id)}`, { body: { optionIds } });
        setDone(`bound ${optionIds.length} option(s)`);
      } else {
        await api('DELETE', `${base}/${enc(channel.id)}`);
        setDone('unbound');
      }
      await onChanged();
    } catch (e) {
      setError(e);
    } finally {
      setBusy('');
    }
  };
  const changed = options.some((o) => picked.has(o.id) !== bound.includes(o.id));
  return html`<tr data-channel=${channel.id} data-bound=${bound.join(',')}>
    <th scope="row">${channel.name}<div class="muted small">${channel.companyName} · <code>${channel.id}</code></div></th>
    <td>
      <fieldset class="inline"><legend class="sr-only">Options bound to ${channel.name}</legend>
        ${options.map(
          (o) => html`<label class="check"><input type="checkbox" data-option=${o.id} checked=${picked.has(o.id)} onChange=${() => flip(o.id)} /> ${o.name} <code class="small">${o.id}</code></label>`,
        )}
      </fieldset>
      ${error && html`<${ErrorBox} error=${error} title="The binding was not changed" />`}
      ${done && html`<p class="ok small" role="status">${channel.name}: ${done}.</p>`}
    </td>
    <td class="actions">
      <button type="button" class="primary" disabled=${!!busy || !changed} onClick=${() => act('bind')} data-action="bind">${busy === 'bind' ? 'Saving…' : binding ? 'Save binding' : 'Bind'}</button>
      <button type="button" class="danger" disabled=${!!busy || !binding} onClick=${() => act('unbind')} data-action="unbind">${busy === 'unbind' ? 'Unbinding…' : 'Unbind'}</button>
    </td>
  </tr>`;
}

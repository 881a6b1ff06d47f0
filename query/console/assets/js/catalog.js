// Catalog: what this reseller's channel is bound to (reseller API v1.2):
// the suppliers, their products and the bound rates. Another channel's
// bindings never show: the API answers for the caller's channel only.
import { api, enc } from './api.js';
import { Busy, ErrorBox, Heading, html, useLoad } from './ui.js';

async function loadCatalog() {
  const { data } = await api('GET', '/v1.2/suppliers');
  return Promise.all(
    (data.suppliers || []).map(async (s) => {
      const { data: pd } = await api('GET', `/v1.2/suppliers/${enc(s.id)}/products`);
      const products = await Promise.all(
        (pd.products || []).map(async (p) => {
          const { data: rd } = await api('GET', `/v1.2/suppliers/${enc(s.id)}/products/${enc(p.id)}/rates`);
          return { ...p, rates: rd.rates || [] };
        }),
      );
      return { ...s, products };
    }),
  );
}

export function Catalog() {
  const [state, reload] = useLoad(loadCatalog, []);
  const sups = state.data || [];
  return html`<section class="view">
    <${Heading}>Catalog<//>
    <p class="lead">The suppliers, products and rates bound to your channel: what your rules are notified about and what you can sell.</p>
    <div class="buttons"><button type="button" onClick=${() => reload()}>Refresh</button></div>
    ${state.loading && html`<${Busy} label="Reading the catalog…" />`}
    <${ErrorBox} error=${state.error} />
    ${state.data && sups.length === 0 && html`<p class="notice" data-catalog="empty">Nothing is bound to your channel yet: an operator binds products to it.</p>`}
    ${sups.map(
      (s) => html`<article class="card" data-supplier=${s.id}>
        <h2>${s.name} <code class="small">${s.id}</code></h2>
        <div class="table-wrap"><table>
          <thead><tr><th scope="col">Product</th><th scope="col">Id</th><th scope="col">Availability</th><th scope="col">Bound rates</th></tr></thead>
          <tbody>
            ${s.products.map(
              (p) => html`<tr data-product=${p.id}>
                <td>${p.name}</td><td><code>${p.id}</code></td><td>${p.availabilityType || ''}</td>
                <td>${p.rates.map((r) => html`<code class="tag">${r.id}</code> `)}</td>
              </tr>`,
            )}
          </tbody>
        </table></div>
      </article>`,
    )}
  </section>`;
}

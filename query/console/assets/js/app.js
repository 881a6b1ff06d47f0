// The console's shell: sign in, the role's views, hash routing (#/rules,
// #/deliveries, ...: a route never holds a credential), sign out.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { html, ErrorBox } from './ui.js';
import { clearSession, loadSession, onRateLimitWait, saveSession, whoAmI } from './api.js';
import { Rules } from './rules.js';
import { Settings } from './settings.js';
import { Deliveries } from './deliveries.js';
import { Charts } from './charts.js';
import { Signature } from './signature.js';
import { Catalog } from './catalog.js';
import { Suppliers } from './suppliers.js';
import { Bindings } from './bindings.js';
import { Notifications } from './notifications.js';
import { CronReports } from './cron.js';

const VIEWS = {
  reseller: [
    ['rules', 'Rules', Rules],
    ['settings', 'Delivery settings', Settings],
    ['deliveries', 'Deliveries', Deliveries],
    ['charts', 'Charts', Charts],
    ['signature', 'Signature checker', Signature],
    ['catalog', 'Catalog', Catalog],
  ],
  operator: [
    ['suppliers', 'Suppliers', Suppliers],
    ['bindings', 'Products and bindings', Bindings],
    ['notifications', 'Change notifications', Notifications],
    ['cron', 'Cron reports', CronReports],
  ],
};
VIEWS.admin = VIEWS.operator;

function route() {
  const m = location.hash.match(/^#\/([a-z-]+)(?:\?(.*))?$/);
  return { name: m ? m[1] : '', params: new URLSearchParams(m && m[2] ? m[2] : '') };
}

function SignIn({ onSignedIn }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const submit = async (ev) => {
    ev.preventDefault();
    const form = ev.currentTarget;
    const creds = { key: form.querySelector('#sign-key').value.trim(), secret: form.querySelector('#sign-secret').value };
    if (!creds.key || !creds.secret) {
      setError(new Error('Give the API key and the API secret.'));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const role = await whoAmI(creds);
      // The secret leaves the form for the tab's sessionStorage only.
      form.querySelector('#sign-secret').value = '';
      saveSession({ ...creds, role });
      onSignedIn();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  // The inputs have no name and the form no action: even without this
  // script nothing would be submitted, and never in a URL.
  return html`<main id="main" class="signin">
    <h1>Switchback console</h1>
    <p>Sign in with an API key and secret: a reseller's to manage its webhook subscriptions and deliveries, an operator's for its suppliers, bindings, change notifications and cron reports.</p>
    <form method="post" onSubmit=${submit} autocomplete="off" aria-describedby="signin-note">
      <div class="field"><label for="sign-key">API key (X-API-Key)</label><input id="sign-key" autocomplete="off" spellcheck="false" required /></div>
      <div class="field"><label for="sign-secret">API secret (X-API-Secret)</label><input id="sign-secret" type="password" autocomplete="off" required /></div>
      <button type="submit" class="primary" disabled=${busy}>${busy ? 'Signing in…' : 'Sign in'}</button>
    </form>
    <p id="signin-note" class="muted small">The key and secret stay in this tab's session storage and are sent only as the X-API-Key and X-API-Secret headers of the console's API calls; closing the tab or signing out forgets them.</p>
    <${ErrorBox} error=${error} title="Sign in failed" />
  </main>`;
}

function Shell({ session, onSignOut }) {
  const views = VIEWS[session.role] || [];
  const [r, setR] = useState(route());
  const [wait, setWait] = useState(0);
  useEffect(() => {
    const f = () => setR(route());
    addEventListener('hashchange', f);
    return () => removeEventListener('hashchange', f);
  }, []);
  useEffect(
    () =>
      onRateLimitWait((s) => {
        setWait(s);
        setTimeout(() => setWait(0), s * 1000);
      }),
    [],
  );
  const current = views.find(([name]) => name === r.name) || views[0];
  useEffect(() => {
    if (current && r.name !== current[0]) history.replaceState(null, '', '#/' + current[0]);
  }, [current, r.name]);
  const skip = () => document.querySelector('#main h1')?.focus();
  const View = current ? current[2] : null;
  return html`<div class="shell" data-role=${session.role}>
    <button type="button" class="skip" onClick=${skip}>Skip to content</button>
    <header class="top">
      <span class="brand">Switchback console</span>
      <nav aria-label="Views">
        ${views.map(
          ([name, label]) =>
            html`<a href=${'#/' + name} aria-current=${current && current[0] === name ? 'page' : undefined} data-view=${name}>${label}</a>`,
        )}
      </nav>
      <span class="who"><span class="role">${session.role}</span> <code>${session.key}</code></span>
      <button type="button" class="signout" onClick=${onSignOut}>Sign out</button>
    </header>
    ${wait > 0 && html`<p class="notice" role="status">The API asked the console to slow down (429): retrying in ${wait} s.</p>`}
    <main id="main" data-view=${current ? current[0] : ''}>${View && html`<${View} key=${current[0]} params=${r.params} session=${session} />`}</main>
  </div>`;
}

function App() {
  const [session, setSession] = useState(loadSession());
  const signOut = () => {
    clearSession();
    setSession(null);
    history.replaceState(null, '', location.pathname);
  };
  if (!session) return html`<${SignIn} onSignedIn=${() => setSession(loadSession())} />`;
  return html`<${Shell} session=${session} onSignOut=${signOut} />`;
}

render(html`<${App} />`, document.getElementById('app'));
document.documentElement.dataset.console = 'ready';

// Shared pieces of the views: the html template tag, the error box, busy
// and progress indicators, form fields, time formatting and a hook for
// loading data.
import { h } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import htm from 'htm';
import { ApiError } from './api.js';

export const html = htm.bind(h);

// ErrorBox shows an API error as the API gave it: status, code, message,
// the field it names and any other data, and the request id to quote.
export function ErrorBox({ error, title }) {
  if (!error) return null;
  if (!(error instanceof ApiError)) {
    return html`<div class="error" role="alert"><strong>${title || 'Error'}</strong><p>${String(error.message || error)}</p></div>`;
  }
  const extra = Object.entries(error.data).filter(([k]) => k !== 'field');
  return html`<div class="error" role="alert" data-code=${error.code}>
    <strong>${title || 'The API refused'}${error.status ? ` · HTTP ${error.status}` : ''} · <code class="code">${error.code}</code></strong>
    <p class="message">${error.message}</p>
    ${error.field && html`<p>Field: <code class="field">${error.field}</code></p>`}
    ${extra.length > 0 &&
    html`<dl class="error-data">${extra.map(([k, v]) => html`<dt>${k}</dt><dd><code>${String(v)}</code></dd>`)}</dl>`}
    ${error.reqId && html`<p class="muted small">Request id <code>${error.reqId}</code> · ${error.method} ${error.path}</p>`}
  </div>`;
}

export function Busy({ label }) {
  return html`<p class="busy" role="status"><span class="spinner" aria-hidden="true"></span>${label || 'Loading…'}</p>`;
}

// Progress is a labelled progress bar; without max it is indeterminate.
export function Progress({ label, value, max }) {
  return html`<div class="progress" role="status">
    <span>${label}</span>
    ${max ? html`<progress value=${value} max=${max} aria-label=${label}>${value}/${max}</progress>` : html`<progress aria-label=${label}></progress>`}
  </div>`;
}

export function Field({ id, label, hint, children }) {
  return html`<div class="field">
    <label for=${id}>${label}</label>
    ${children}
    ${hint && html`<small id=${id + '-hint'} class="hint">${hint}</small>`}
  </div>`;
}

// Outcome badges: one colour per delivery outcome or status word.
export function Badge({ value }) {
  const v = String(value || '').toLowerCase();
  return html`<span class=${'badge badge-' + v.replace(/[^a-z_-]/g, '')}>${value}</span>`;
}

const pad = (n) => String(n).padStart(2, '0');

// Time shows a time in the browser's zone (with its milliseconds when ms
// is set), the exact UTC time as the tooltip.
export function Time({ value, ms }) {
  if (!value) return html`<span class="muted">—</span>`;
  const d = new Date(value);
  if (isNaN(d)) return html`<span>${value}</span>`;
  let s = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  if (ms) s += '.' + String(d.getMilliseconds()).padStart(3, '0');
  return html`<time datetime=${d.toISOString()} title=${d.toISOString()}>${s}</time>`;
}

export function ago(value) {
  const s = Math.round((Date.now() - new Date(value).getTime()) / 1000);
  if (isNaN(s)) return '';
  if (Math.abs(s) < 60) return `${s} s ago`;
  if (Math.abs(s) < 3600) return `${Math.round(s / 60)} min ago`;
  if (Math.abs(s) < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

// localInput turns a time into the value of an <input type="datetime-local">
// and back.
export function toLocalInput(d) {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}
export function fromLocalInput(v) {
  const d = new Date(v);
  return isNaN(d) ? null : d;
}

// splitIds reads a list of ids typed with commas, spaces or new lines.
export function splitIds(s) {
  return String(s || '')
    .split(/[\s,]+/)
    .map((x) => x.trim())
    .filter(Boolean);
}

// useLoad runs load() now and whenever deps change or reload() is called;
// it keeps the previous data while reloading.
export function useLoad(load, deps) {
  const [state, setState] = useState({ loading: true, error: null, data: null });
  const seq = useRef(0);
  const run = useCallback(() => {
    const n = ++seq.current;
    setState((s) => ({ ...s, loading: true }));
    return Promise.resolve()
      .then(load)
      .then(
        (data) => n === seq.current && setState({ loading: false, error: null, data }),
        (error) => n === seq.current && setState((s) => ({ loading: false, error, data: s.data })),
      );
  }, deps);
  useEffect(() => {
    run();
  }, [run]);
  return [state, run];
}

// usePoll calls fn every ms while on is true.
export function usePoll(fn, ms, on) {
  const saved = useRef(fn);
  saved.current = fn;
  useEffect(() => {
    if (!on) return undefined;
    const t = setInterval(() => saved.current(), ms);
    return () => clearInterval(t);
  }, [ms, on]);
}

// Copy copies text to the clipboard (when the browser allows it).
export function CopyButton({ text, label }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setDone(true);
      setTimeout(() => setDone(false), 1500);
    } catch {
      setDone(false);
    }
  };
  return html`<button type="button" class="small" onClick=${copy}>${done ? 'Copied' : label || 'Copy'}</button>`;
}

// Heading is a view's h1; it takes the focus when the view opens, so that
// keyboard and screen-reader users land on the new view.
export function Heading({ children }) {
  const ref = useRef(null);
  useEffect(() => {
    if (ref.current) ref.current.focus();
  }, []);
  return html`<h1 tabindex="-1" ref=${ref}>${children}</h1>`;
}

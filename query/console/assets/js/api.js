// The console's only way to the API: the same paths, headers and error
// object as any client. The credentials are read from this tab's
// sessionStorage at every call and sent in the X-API-Key and X-API-Secret
// headers only: never in a URL, a cookie or the console.

const STORE = 'switchback.console.session';

export function loadSession() {
  try {
    const s = JSON.parse(sessionStorage.getItem(STORE));
    return s && s.key && s.secret ? s : null;
  } catch {
    return null;
  }
}

export function saveSession(s) {
  sessionStorage.setItem(STORE, JSON.stringify(s));
}

export function clearSession() {
  sessionStorage.removeItem(STORE);
}

// ApiError is a refused or failed call: the API's error object (code,
// message, data with data.field for a bad field), the HTTP status and the
// request id, or status 0 when no answer came.
export class ApiError extends Error {
  constructor(status, body, reqId, method, path) {
    const b = body && typeof body === 'object' ? body : {};
    super(b.message || (status ? `HTTP ${status}` : 'no answer from the API'));
    this.status = status;
    this.code = b.code || (status ? `HTTP_${status}` : 'NETWORK');
    this.data = b.data && typeof b.data === 'object' ? b.data : {};
    this.field = this.data.field || '';
    this.reqId = reqId || (b.meta && b.meta.reqId) || '';
    this.method = method;
    this.path = path;
  }
}

// Listeners of rate-limit waits (the shell shows them).
const waitListeners = new Set();
export function onRateLimitWait(fn) {
  waitListeners.add(fn);
  return () => waitListeners.delete(fn);
}

// History reads scan ClickHouse and the API bounds how many of them one key
// may run at once: the console sends them one at a time.
let historyChain = Promise.resolve();
function oneAtATime(fn) {
  const p = historyChain.then(fn, fn);
  historyChain = p.catch(() => {});
  return p;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function withQuery(path, query) {
  if (!query) return path;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

// api calls the API as the signed-in principal (or as creds, for the sign
// in itself) and resolves to {status, data, reqId}; it rejects with an
// ApiError. A 429 is retried (twice, after its Retry-After, at most 5 s).
export async function api(method, path, opts = {}) {
  const creds = opts.creds || loadSession();
  if (!creds) throw new ApiError(401, { code: 'UNAUTHORIZED', message: 'not signed in' }, '', method, path);
  const url = withQuery(path, opts.query);
  const headers = { 'X-API-Key': creds.key, 'X-API-Secret': creds.secret, Accept: 'application/json' };
  let body;
  if (opts.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  const call = async () => {
    for (let attempt = 0; ; attempt++) {
      let res;
      try {
        res = await fetch(url, { method, headers, body, credentials: 'omit', cache: 'no-store', redirect: 'error', referrerPolicy: 'no-referrer' });
      } catch {
        throw new ApiError(0, { code: 'NETWORK', message: 'the API did not answer (network error or the server is down)' }, '', method, path);
      }
      const reqId = res.headers.get('X-Request-ID') || '';
      const text = await res.text();
      let data = null;
      if (text) {
        try {
          data = JSON.parse(text);
        } catch {
          data = { message: text.slice(0, 300) };
        }
      }
      if (res.status === 429 && attempt < 2) {
        const wait = Math.min(Math.max(Number(res.headers.get('Retry-After')) || 1, 1), 5);
        waitListeners.forEach((fn) => fn(wait));
        await sleep(wait * 1000);
        continue;
      }
      if (!res.ok) throw new ApiError(res.status, data, reqId, method, path);
      return { status: res.status, data, reqId };
    }
  };
  return opts.history ? oneAtATime(call) : call();
}

// whoAmI finds the role of creds: the registry answers resellers only, the
// operator API operators and admins, the admin API admins. 401 rejects.
export async function whoAmI(creds) {
  try {
    await api('GET', '/registry/v1.1/metadata', { creds });
    return 'reseller';
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 403) throw e;
  }
  await api('GET', '/operator/v2/channels', { creds });
  try {
    await api('GET', '/admin/v1/principals', { creds });
    return 'admin';
  } catch (e) {
    if (e instanceof ApiError && e.status === 403) return 'operator';
    throw e;
  }
}

// Notification types with their registry paths (spec doc 1: the CRUD of
// channelbinding rules is under /channelbindings, its test under
// /channelbinding/test/{id}).
export const TYPES = ['channelbinding', 'supplier', 'product', 'rate', 'availability', 'priceschedule', 'booking'];
export const crudPath = (t) => `/registry/v1.1/${t === 'channelbinding' ? 'channelbindings' : t}`;
export const testPath = (t, id) => `/registry/v1.1/${t}/test/${encodeURIComponent(id)}`;
export const enc = encodeURIComponent;

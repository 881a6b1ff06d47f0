// Signature checker: paste a webhook body and the rule's securityKey, and
// see whether its signature verifies (spec doc 1, Authentication 1:
// lowercase hex HMAC-SHA256, keyed by the securityKey as written, over the
// decimal text of signature.timestamp followed by signature.token). It all
// happens in this tab: neither the payload nor the key is sent anywhere.
import { useState } from 'preact/hooks';
import { ago, ErrorBox, Field, Heading, html, Time, useLoad } from './ui.js';
import { loadRules } from './rules.js';

// SHA-256 (FIPS 180-4), for browsers without Web Crypto: it is only
// offered to pages of a secure context (https or localhost), and the
// console may be opened over plain http on a private network.
const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
  0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
  0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

export function sha256(msg) {
  const bitLen = msg.length * 8;
  const padded = new Uint8Array(((msg.length + 9 + 63) >> 6) << 6);
  padded.set(msg);
  padded[msg.length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, Math.floor(bitLen / 0x100000000));
  view.setUint32(padded.length - 4, bitLen >>> 0);
  const H = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
  const W = new Uint32Array(64);
  const rotr = (x, n) => (x >>> n) | (x << (32 - n));
  for (let off = 0; off < padded.length; off += 64) {
    for (let i = 0; i < 16; i++) W[i] = view.getUint32(off + i * 4);
    for (let i = 16; i < 64; i++) {
      const s0 = rotr(W[i - 15], 7) ^ rotr(W[i - 15], 18) ^ (W[i - 15] >>> 3);
      const s1 = rotr(W[i - 2], 17) ^ rotr(W[i - 2], 19) ^ (W[i - 2] >>> 10);
      W[i] = (W[i - 16] + s0 + W[i - 7] + s1) >>> 0;
    }
    let [a, b, c, d, e, f, g, h] = H;
    for (let i = 0; i < 64; i++) {
      const S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const ch = (e & f) ^ (~e & g);
      const t1 = (h + S1 + ch + K[i] + W[i]) >>> 0;
      const S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (S0 + maj) >>> 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) >>> 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) >>> 0;
    }
    H[0] += a;
    H[1] += b;
    H[2] += c;
    H[3] += d;
    H[4] += e;
    H[5] += f;
    H[6] += g;
    H[7] += h;
  }
  const out = new Uint8Array(32);
  const ov = new DataView(out.buffer);
  H.forEach((v, i) => ov.setUint32(i * 4, v));
  return out;
}

// hmacSHA256 is RFC 2104 over sha256 (block size 64).
export function hmacSHA256(key, msg) {
  let k = key.length > 64 ? sha256(key) : key;
  const block = new Uint8Array(64);
  block.set(k);
  const inner = new Uint8Array(64 + msg.length);
  const outer = new Uint8Array(64 + 32);
  for (let i = 0; i < 64; i++) {
    inner[i] = block[i] ^ 0x36;
    outer[i] = block[i] ^ 0x5c;
  }
  inner.set(msg, 64);
  outer.set(sha256(inner), 64);
  return sha256(outer);
}

const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
const utf8 = (s) => new TextEncoder().encode(s);

// hmacHex is the lowercase hex HMAC-SHA256 of data under key (both
// strings, as UTF-8), with Web Crypto when the page has it.
export async function hmacHex(key, data, { noWebCrypto = false } = {}) {
  if (!noWebCrypto && globalThis.crypto && crypto.subtle) {
    const k = await crypto.subtle.importKey('raw', utf8(key), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    return hex(new Uint8Array(await crypto.subtle.sign('HMAC', k, utf8(data))));
  }
  return hex(hmacSHA256(utf8(key), utf8(data)));
}

// check verifies a webhook body: {ok, expected, computed, signed,
// timestamp} or {error} when the body has no usable signature.
export async function check(body, key, opts) {
  let payload;
  try {
    payload = JSON.parse(body);
  } catch (e) {
    return { error: `the payload is not JSON: ${e.message}` };
  }
  const sig = payload && payload.signature;
  if (!sig || typeof sig !== 'object') return { error: 'the payload has no signature object' };
  if (typeof sig.sum !== 'string' || typeof sig.token !== 'string' || typeof sig.timestamp !== 'number') {
    return { error: 'signature must have sum (string), timestamp (number) and token (string)' };
  }
  if (!key) return { error: 'give the rule\u2019s securityKey' };
  // The decimal text of the timestamp as sent (a JSON number), not as
  // JavaScript would print a large or fractional one.
  const raw = body.match(/"timestamp"\s*:\s*(-?\d+)(?=\s*[,}])/);
  const ts = raw ? raw[1] : String(sig.timestamp);
  const signed = ts + sig.token;
  const computed = await hmacHex(key, signed, opts);
  return { ok: computed === sig.sum.toLowerCase(), expected: sig.sum, computed, signed, timestamp: sig.timestamp };
}

export function Signature() {
  const [rules] = useLoad(loadRules, []);
  const [result, setResult] = useState(null);
  const [key, setKey] = useState('');
  const submit = async (ev) => {
    ev.preventDefault();
    const f = ev.currentTarget;
    setResult(await check(f.querySelector('#sig-payload').value, f.querySelector('#sig-key').value.trim()));
  };
  const pick = (ev) => {
    const t = ev.currentTarget.value;
    const r = rules.data && rules.data[t];
    setKey(r ? r.securityKey : '');
  };
  const types = rules.data ? Object.keys(rules.data).filter((t) => rules.data[t]) : [];
  return html`<section class="view">
    <${Heading}>Signature checker<//>
    <p class="lead">Paste a webhook body as your endpoint received it and the rule's securityKey: the console recomputes <code>signature.sum</code> = lowercase hex HMAC-SHA256(key, timestamp + token) and compares. Nothing you paste leaves this tab.</p>
    <form class="panel" onSubmit=${submit} data-form="signature">
      <${Field} id="sig-payload" label="Webhook body (JSON)">
        <textarea id="sig-payload" rows="8" spellcheck="false" placeholder='{"supplierID":"…","operation":"updated","signature":{"sum":"…","timestamp":1700000000,"token":"…"}}'></textarea>
      <//>
      ${types.length > 0 &&
      html`<${Field} id="sig-rule" label="Use the key of your rule"><select id="sig-rule" onChange=${pick}><option value="">— paste a key below —</option>${types.map((t) => html`<option value=${t}>${t}</option>`)}</select><//>`}
      <${Field} id="sig-key" label="securityKey" hint="The key as the registry shows it (64 hex characters): its text is the HMAC key.">
        <input id="sig-key" value=${key} onInput=${(e) => setKey(e.currentTarget.value)} spellcheck="false" autocomplete="off" />
      <//>
      <div class="buttons"><button type="submit" class="primary">Check the signature</button></div>
    </form>
    <${ErrorBox} error=${rules.error} title="Your rules could not be read (paste the key)" />
    ${result && result.error && html`<p class="error" role="alert" data-signature="unusable">${result.error}</p>`}
    ${result &&
    !result.error &&
    html`<div class=${result.ok ? 'ok' : 'error'} role="status" data-signature=${result.ok ? 'valid' : 'invalid'}>
      <strong>${result.ok ? 'Valid: the signature matches this key.' : 'Invalid: the signature does not match this key (wrong key, or the body was changed).'}</strong>
      <dl class="sig">
        <dt>signed data (timestamp + token)</dt><dd><code>${result.signed}</code></dd>
        <dt>signature.sum</dt><dd><code>${result.expected}</code></dd>
        <dt>computed</dt><dd><code>${result.computed}</code></dd>
        <dt>signed at</dt><dd><${Time} value=${result.timestamp * 1000} /> (${ago(result.timestamp * 1000)}); a receiver should refuse old timestamps and tokens it has seen.</dd>
      </dl>
    </div>`}
  </section>`;
}

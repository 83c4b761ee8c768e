// The glue for downloads' bytes (extension-wasm/src/downloads.rs): the service worker fetches a
// download's address again — a data: URL's own bytes, a page's blob: while the page keeps it,
// an http(s) URL with the profile's cookies — and hands the wasm base64.

/**
 * Resolves to the bytes at `url` as base64. Rejects on a redirect (the address Chrome
 * downloaded from is its final one: a redirect now leads somewhere else), on an HTTP error, and
 * past `max` bytes, which it stops reading at.
 */
export async function fetchBytes(url, max) {
  const response = await fetch(url, { credentials: 'include', cache: 'no-store', redirect: 'error' });
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  const tooBig = (size) => new Error(`it holds ${size} bytes, more than the ${max} returned at once`);
  const tooBigUnsized = () => new Error(`it holds more than the ${max} bytes returned at once`);
  const declared = Number(response.headers.get('content-length'));
  if (declared > max) throw tooBig(declared);
  const reader = response.body.getReader();
  const parts = [];
  let length = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    length += value.length;
    if (length > max) {
      reader.cancel();
      throw tooBigUnsized();
    }
    parts.push(value);
  }
  const bytes = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.length;
  }
  if (typeof bytes.toBase64 === 'function') return bytes.toBase64();
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    text += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return btoa(text);
}

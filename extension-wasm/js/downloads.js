// The glue for downloads' bytes (extension-wasm/src/downloads.rs): the service worker fetches a
// download's address again — a data: URL's own bytes, a page's blob: while the page keeps it,
// an http(s) URL with the profile's cookies — and hands the wasm base64.

/** Resolves to the bytes at `url` as base64; rejects past `max` bytes or on an HTTP error. */
export async function fetchBytes(url, max) {
  const response = await fetch(url, { credentials: 'include', cache: 'no-store' });
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  const bytes = new Uint8Array(await response.arrayBuffer());
  if (bytes.length > max) throw new Error(`it holds ${bytes.length} bytes, more than the ${max} returned at once`);
  if (typeof bytes.toBase64 === 'function') return bytes.toBase64();
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    text += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return btoa(text);
}

/** What Node and undici accept in a header value: tab, visible ASCII, space and obs-text (Latin-1). */
const HEADER_VALUE = /^[\t\u0020-\u007e\u0080-\u00ff]*$/;

/**
 * Whether `text` can be sent as an HTTP header value as it is. A stored secret that travels in a
 * header (a destination's API key, a BYOK provider key) is checked with it when saved: one that
 * cannot would fail every request made with it.
 */
export function isHeaderValue(text: string): boolean {
  return HEADER_VALUE.test(text);
}

import type { UpstreamTarget } from '../../../spec/provider-adapter.js';

/**
 * `derive(target)` made once per target and reused: an adapter's URL and headers for one provider
 * credential are the same on every call, and the platform's targets live as long as the gateway (a
 * workspace's BYOK target is made per request and goes with it). What it returns is shared by every
 * call, so it is frozen; the HTTP client copies headers before adding its own.
 */
export function perTarget<T extends object | string>(
  derive: (target: UpstreamTarget) => T,
): (target: UpstreamTarget) => T {
  const made = new WeakMap<UpstreamTarget, T>();
  return (target) => {
    let value = made.get(target);
    if (value === undefined) {
      value = derive(target);
      if (typeof value === 'object') Object.freeze(value);
      made.set(target, value);
    }
    return value;
  };
}

/** A target's base URL without its trailing slashes, to append a path to. */
export const baseUrlOf = (target: UpstreamTarget): string => target.baseUrl.replace(/\/+$/, '');

/**
 * A target's request headers, made once per target: its credential in the provider's own header
 * (none without a key), then `fixed` headers, then the target's own, which win.
 */
export function credentialHeadersOf(
  credential: (apiKey: string) => Record<string, string>,
  fixed: Record<string, string> = {},
): (target: UpstreamTarget) => Record<string, string> {
  return perTarget(
    (target): Record<string, string> => ({
      ...(target.apiKey ? credential(target.apiKey) : {}),
      ...fixed,
      ...target.headers,
    }),
  );
}

/** OpenAI's credential header (`Authorization: Bearer …`) and the target's own headers, per target. */
export const bearerHeadersOf = credentialHeadersOf((apiKey) => ({ authorization: `Bearer ${apiKey}` }));

import type { Catalog } from '../../catalog/catalog.js';
import { DEMO_PROVIDER_SLUG } from '../../catalog/demo-provider.js';
import { invalidRequest } from '../../errors/app-error.js';
import { isHeaderValue } from '../../platform/header-value.js';

/** Keys shorter than this are masked completely: 7 shown characters would be too much of them. */
const MIN_LENGTH_TO_SHOW_ENDS = 24;
const SHOWN_PREFIX = 3;
const SHOWN_SUFFIX = 4;
const FULLY_MASKED = '********';

/**
 * The label of a provider secret: its first 3 and last 4 characters around "...", enough to tell two
 * keys apart in a list and nowhere near enough to use (at least 17 characters stay hidden). Counted in
 * code points, so a label never splits a character.
 */
export function maskSecret(secret: string): string {
  const characters = Array.from(secret);
  if (characters.length < MIN_LENGTH_TO_SHOW_ENDS) return FULLY_MASKED;
  return `${characters.slice(0, SHOWN_PREFIX).join('')}...${characters.slice(-SHOWN_SUFFIX).join('')}`;
}

/**
 * Whether a value has the shape of a label `maskSecret` makes (`********`, or 3 characters, "...",
 * 4 characters): what GET shows in place of a key, sent back as if it were one. No provider issues
 * keys of either shape.
 */
export function isMaskedLabel(value: string): boolean {
  if (value === FULLY_MASKED) return true;
  const characters = Array.from(value);
  return (
    characters.length === SHOWN_PREFIX + 3 + SHOWN_SUFFIX &&
    characters.slice(SHOWN_PREFIX, SHOWN_PREFIX + 3).join('') === '...'
  );
}

// C0 controls, DEL and C1 controls: a pasted key with one of these is a paste error, not a key.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/u;
/** With the u flag a surrogate range matches only surrogates that are not part of a pair. */
const UNPAIRED_SURROGATE = /[\ud800-\udfff]/u;

/** Length (1–4096) is the schema's; these are the rules a schema would only say as a pattern. */
export function checkSecret(secret: string): void {
  if (isMaskedLabel(secret)) {
    throw invalidRequest(
      'Invalid request parameters: body.key is a masked label as GET shows it, not a key: send the whole key, or leave key out to keep the stored one',
    );
  }
  if (secret.trim() !== secret) {
    throw invalidRequest('Invalid request parameters: body.key must not start or end with whitespace');
  }
  if (CONTROL_CHARACTER.test(secret)) {
    throw invalidRequest('Invalid request parameters: body.key must not contain control characters');
  }
  // Sealed as UTF-8, an unpaired surrogate would come back as U+FFFD: not the key that was sent.
  if (UNPAIRED_SURROGATE.test(secret)) {
    throw invalidRequest('Invalid request parameters: body.key must not contain unpaired surrogates');
  }
  // It travels in an HTTP header (Authorization, x-api-key…), which holds Latin-1 only: a key with
  // any other character was saved and then failed every request with a 502.
  // (Controls are refused above, so what this refuses is anything past U+00FF.)
  if (!isHeaderValue(secret)) {
    throw invalidRequest(
      'Invalid request parameters: body.key must hold only printable Latin-1 characters (it is sent in an HTTP header)',
    );
  }
}

/** The catalogue provider a credential is for: its display name (the default credential name). */
export function resolveProvider(catalog: Catalog, slug: string): { slug: string; name: string } {
  // Checked first, so the answer is the same whether the demo provider is switched on or off.
  if (slug === DEMO_PROVIDER_SLUG) {
    throw invalidRequest(
      `Invalid request parameters: body.provider cannot be "${DEMO_PROVIDER_SLUG}": the built-in demo provider takes no credentials`,
    );
  }
  const provider = catalog.providers.find((candidate) => candidate.slug === slug);
  if (!provider) {
    throw invalidRequest(
      'Invalid request parameters: body.provider must be the slug of a provider in the catalogue (GET /providers lists them)',
    );
  }
  return { slug: provider.slug, name: provider.name };
}

/**
 * Model ids or canonical slugs, stored as canonical slugs (like guardrail model lists): a variant
 * (`:free`, `:batch`) names its model. Names that become the same slug are kept once, in order.
 */
export function resolveModels(catalog: Catalog, models: readonly string[]): string[] {
  const slugs = models.map((model, index) => {
    const found = catalog.lookup(model)[0];
    if (!found) {
      throw invalidRequest(
        `Invalid request parameters: body.allowed_models.${index} must be a model id or canonical slug of the catalogue`,
      );
    }
    return found.canonicalSlug;
  });
  return [...new Set(slugs)];
}

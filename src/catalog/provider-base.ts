/**
 * A provider's base slug: `deepinfra` for `deepinfra/fp4`, `google-vertex` for
 * `google-vertex/us-east5`. Settings, credentials and hidden lists are keyed by it; endpoints carry
 * the variant.
 */
export const providerBase = (providerSlug: string): string => providerSlug.split('/')[0]!;

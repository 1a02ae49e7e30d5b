/**
 * What one generated image is counted when the upstream did not say (a cut stream, a reply whose
 * usage lacks its IMAGE entry): Gemini's documented count for the model and the size asked for.
 * The size of an image's base64 tells nothing of its tokens.
 *
 * Gemini 3 Pro Image: 1,120 tokens for a 1K or 2K image, 2,000 for a 4K one; Gemini 3.1 Flash
 * Image: 747 for 512 px, 1,120 for 1K, 1,680 for 2K, 2,520 for 4K
 * (https://docs.cloud.google.com/vertex-ai/generative-ai/docs/models/gemini/3-1-flash-image). A
 * Gemini 3 image model makes 1K images unless asked otherwise. Each count is what the model reports
 * for such an image, never more: billing takes the larger of the reported count and this one, and
 * a higher guess would overcharge every reply that reports its images right.
 */
const GEMINI_3_IMAGE_TOKENS = 1120;
const GEMINI_3_PRO_4K_TOKENS = 2000;
const GEMINI_3_1_FLASH_TOKENS: Record<SizeTier, number> = {
  '0.5K': 747,
  '1K': 1120,
  '2K': 1680,
  '4K': 2520,
};

/**
 * Any other model's image: Gemini 2.5 Flash Image's count for one of up to 1024×1024 (the only size
 * it makes).
 */
export const DEFAULT_IMAGE_TOKENS = 1290;

type SizeTier = '0.5K' | '1K' | '2K' | '4K';

/** A requested `image_size` (`1K`, `0.5K`, or pixels such as `2048`) as the tier it falls in. */
function sizeTier(size: string): SizeTier {
  const kilo = size.endsWith('K') ? Number(size.slice(0, -1)) : Number(size) / 1024;
  if (kilo > 2) return '4K';
  if (kilo > 1) return '2K';
  if (kilo > 0.5) return '1K';
  return '0.5K';
}

/** The tokens one image of `model` (a catalogue id such as `google/gemini-3-pro-image`) is counted. */
export function estimatedImageTokens(model: string, imageSize: string | undefined): number {
  const tier = imageSize === undefined ? '1K' : sizeTier(imageSize);
  // Plain substring tests: this runs for every request's reservation, images or not.
  if (model.includes('gemini-3.1-flash-image')) return GEMINI_3_1_FLASH_TOKENS[tier];
  if (model.includes('gemini-3-pro-image'))
    return tier === '4K' ? GEMINI_3_PRO_4K_TOKENS : GEMINI_3_IMAGE_TOKENS;
  if ((model.includes('gemini-3.') || model.includes('gemini-3-')) && tier !== '2K' && tier !== '4K')
    return GEMINI_3_IMAGE_TOKENS;
  return DEFAULT_IMAGE_TOKENS;
}

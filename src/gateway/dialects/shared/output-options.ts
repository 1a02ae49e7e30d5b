import { Type } from 'typebox';
import type { GenerationRequest, ImageConfig, OutputModality } from '../../../spec/generation-request.js';
import { invalidParameter } from './invalid-parameter.js';

/**
 * `modalities` and `image_config`, as the chat and Responses surfaces take them (reference
 * `ImageConfig`, OpenRouter's image generation guide): what the answer may hold, and how its
 * images are shaped. /messages has neither (Anthropic's Messages has no block for a generated image).
 */

/**
 * The reference's `ImageConfig`: provider-specific options. The keys the Gemini adapter sends are
 * checked by `applyOutputOptions` (null for one of them is not given); others are accepted whatever
 * their JSON value and not sent, since the object is the provider's and a client may send one for
 * several models (no protocol here takes another key). Null for the whole object is not given.
 */
export const ImageConfigSchema = Type.Unsafe<Record<string, unknown> | null>({
  type: ['object', 'null'],
  additionalProperties: true,
  description:
    'Image options: aspect_ratio (e.g. "16:9") and image_size ("1K", "2K", "4K"); other keys are accepted and not sent',
});

/** Width:height in whole numbers, as Gemini's `aspectRatio` takes it (`1:1` … `21:9`). */
const ASPECT_RATIO = /^[1-9]\d{0,2}:[1-9]\d{0,2}$/;
/** A size tier (`1K`, `2K`, `4K`, `0.5K`) or a pixel count. */
const IMAGE_SIZE = /^(?:\d{1,2}(?:\.\d{1,2})?K|\d{1,5})$/;

/**
 * Sets the request's `outputModalities` and `imageConfig` from the body's fields, or throws a 400
 * naming the field and its rule. `image_config` is taken with any `modalities` (a malformed value
 * is still a 400) and set where the answer may hold images: `image` among the modalities, or none
 * named. A request with neither field (nearly all) costs one check.
 */
export function applyOutputOptions(
  generation: Omit<GenerationRequest, 'model'>,
  modalities: readonly string[] | null | undefined,
  imageConfig: Record<string, unknown> | null | undefined,
): void {
  if (modalities == null && imageConfig == null) return;
  let text = false;
  let image = false;
  if (modalities != null) {
    if (modalities.length === 0)
      throw invalidParameter('body.modalities', 'must list "text", "image" or both');
    modalities.forEach((modality, index) => {
      if (modality === 'text') text = true;
      else if (modality === 'image') image = true;
      else
        throw invalidParameter(
          `body.modalities.${index}`,
          `${JSON.stringify(modality)} is not supported: an answer holds text and images`,
        );
    });
    const wanted: OutputModality[] = text && image ? ['text', 'image'] : image ? ['image'] : ['text'];
    generation.outputModalities = wanted;
  }
  if (imageConfig == null) return;
  const config = checkedImageConfig(imageConfig);
  // Clients that send one body to many models send their image options with every request: they
  // are checked whatever `modalities` says, and kept only where the answer may hold images.
  if (config && (modalities == null || image)) generation.imageConfig = config;
}

function checkedImageConfig(given: Record<string, unknown>): ImageConfig | undefined {
  const config: ImageConfig = {};
  const ratio = given.aspect_ratio;
  if (ratio != null) {
    if (typeof ratio !== 'string' || !ASPECT_RATIO.test(ratio))
      throw invalidParameter('body.image_config.aspect_ratio', 'must be a width:height ratio such as "16:9"');
    config.aspectRatio = ratio;
  }
  const size = given.image_size;
  if (size != null) {
    if (typeof size !== 'string' || !IMAGE_SIZE.test(size))
      throw invalidParameter('body.image_config.image_size', 'must be a size such as "1K", "2K" or "4K"');
    config.imageSize = size;
  }
  return config.aspectRatio !== undefined || config.imageSize !== undefined ? config : undefined;
}

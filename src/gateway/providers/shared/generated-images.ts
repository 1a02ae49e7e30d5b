import type { InputItem } from '../../../spec/generation-request.js';
import { UnsupportedRequestError } from '../../../spec/upstream-error.js';

const isGenerated = (part: { type: string; generated?: true }): boolean =>
  part.type === 'image' && part.generated === true;

const isInstructions = (item: InputItem): boolean =>
  item.type === 'message' && (item.role === 'system' || item.role === 'developer');

/**
 * Input for a protocol that takes no image in an assistant turn (OpenAI chat and Responses,
 * Anthropic): the images a model generated, which a client sends back with the turn they came in,
 * are left out, and so is an assistant turn that held nothing else. The input itself when there are
 * none. Gemini takes them back instead, as `inlineData` in the model turn.
 *
 * A conversation that leaving them out empties (nothing left but instructions) is refused with an
 * UnsupportedRequestError about the input, rather than sent without a turn, which these providers
 * refuse or answer with nothing asked: routing moves on to a candidate that takes them (Gemini), and
 * with none the client gets a 400 naming `body.messages` or `body.input`.
 */
export function withoutGeneratedImages(input: InputItem[]): InputItem[] {
  if (!input.some((item) => item.type === 'message' && item.content.some(isGenerated))) return input;
  const kept = input.flatMap((item): InputItem[] => {
    if (item.type !== 'message' || !item.content.some(isGenerated)) return [item];
    const content = item.content.filter((part) => !isGenerated(part));
    return content.length > 0 ? [{ ...item, content }] : [];
  });
  if (kept.every(isInstructions))
    throw new UnsupportedRequestError(
      "holds only generated images besides instructions, which this model's provider cannot take back",
      { field: 'input' },
    );
  return kept;
}

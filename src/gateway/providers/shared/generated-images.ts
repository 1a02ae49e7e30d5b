import type { InputItem } from '../../../spec/generation-request.js';

const isGenerated = (part: { type: string; generated?: true }): boolean =>
  part.type === 'image' && part.generated === true;

/**
 * Input for a protocol that takes no image in an assistant turn (OpenAI chat and Responses,
 * Anthropic): the images a model generated, which a client sends back with the turn they came in,
 * are left out, and so is an assistant turn that held nothing else. The input itself when there are
 * none. Gemini takes them back instead, as `inlineData` in the model turn.
 */
export function withoutGeneratedImages(input: InputItem[]): InputItem[] {
  if (!input.some((item) => item.type === 'message' && item.content.some(isGenerated))) return input;
  return input.flatMap((item): InputItem[] => {
    if (item.type !== 'message' || !item.content.some(isGenerated)) return [item];
    const content = item.content.filter((part) => !isGenerated(part));
    return content.length > 0 ? [{ ...item, content }] : [];
  });
}

import type { ContentPart, InputItem } from '../../../spec/generation-request.js';

/**
 * Input for a provider whose tool results hold text only (OpenAI chat and Responses, Gemini): the
 * images and files a tool returned (`media`) follow the run of results they came in, as a user
 * message, so the model still sees them. After the run, not after each result: OpenAI wants every
 * result of a turn's calls right after that turn. The input itself when no result has media.
 */
export function mediaAfterResults(input: InputItem[]): InputItem[] {
  if (!input.some((item) => item.type === 'function-call-output' && item.media !== undefined)) return input;
  const out: InputItem[] = [];
  let pending: ContentPart[] = [];
  const release = () => {
    if (pending.length === 0) return;
    out.push({ type: 'message', role: 'user', content: pending });
    pending = [];
  };
  for (const item of input) {
    if (item.type !== 'function-call-output') release();
    out.push(item);
    if (item.type === 'function-call-output' && item.media !== undefined) {
      pending.push(
        { type: 'text', text: `The result of tool call ${item.callId} came with:` },
        ...item.media,
      );
    }
  }
  release();
  return out;
}

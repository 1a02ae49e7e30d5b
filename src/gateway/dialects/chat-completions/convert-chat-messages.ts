import type { ContentPart, InputItem } from '../../../spec/generation-request.js';
import { invalidParameter } from '../shared/invalid-parameter.js';
import { contentUrlProblem, isBase64, isContentUrl } from '../shared/request-rules.js';
import type { ContentPartBody, MessageBody } from './chat-completions-schema.js';
import { attachReasoningDetails } from './chat-reasoning-details.js';

/**
 * Chat messages → canonical input items. System and developer messages stay messages with their
 * role (they are instructions; adapters decide where they go); an assistant's `tool_calls` become
 * `function-call` items after that turn's text; `tool` messages become `function-call-output`.
 * The schema has checked types; this checks what depends on the role.
 */

function userPart(part: ContentPartBody, path: string): ContentPart {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text };
    case 'image_url': {
      const image = part.image_url;
      const imageProblem = contentUrlProblem(image.url);
      if (imageProblem) throw invalidParameter(`${path}.image_url.url`, imageProblem);
      // `original` is the reference's extension; providers without such a tier get `high`.
      const detail = image.detail === 'original' ? 'high' : image.detail;
      return detail ? { type: 'image', url: image.url, detail } : { type: 'image', url: image.url };
    }
    case 'file': {
      const { file } = part;
      if (file.file_data === undefined) {
        if (file.file_id !== undefined)
          throw invalidParameter(
            `${path}.file.file_id`,
            'is not supported: send the file inline as file.file_data',
          );
        throw invalidParameter(`${path}.file.file_data`, 'is required');
      }
      const fileProblem = isContentUrl(file.file_data)
        ? contentUrlProblem(file.file_data)
        : 'must be a data: URL or an http(s) URL';
      if (fileProblem) throw invalidParameter(`${path}.file.file_data`, fileProblem);
      return file.filename
        ? { type: 'file', url: file.file_data, filename: file.filename }
        : { type: 'file', url: file.file_data };
    }
    case 'input_audio':
      if (!isBase64(part.input_audio.data))
        throw invalidParameter(`${path}.input_audio.data`, 'must be base64 data');
      return { type: 'audio', data: part.input_audio.data, format: part.input_audio.format };
    case 'refusal':
      throw invalidParameter(`${path}.type`, 'must be text, image_url, file or input_audio in user messages');
  }
}

/** Text of a part list where only text is allowed (system, developer, tool); refusals count as text for assistants. */
function textOf(part: ContentPartBody, path: string, role: string, allowRefusal = false): string {
  if (part.type === 'text') return part.text;
  if (part.type === 'refusal' && allowRefusal) return part.refusal;
  throw invalidParameter(`${path}.type`, `must be text in ${role} messages`);
}

function contentOf(message: MessageBody, path: string): ContentPart[] {
  const { content, role } = message;
  if (content === undefined || content === null) {
    if (role === 'assistant') return [];
    throw invalidParameter(`${path}.content`, `is required for ${role} messages`);
  }
  if (typeof content === 'string') {
    // An assistant turn with no text (only tool calls) sends "" rather than null in some clients.
    return role === 'assistant' && content === '' ? [] : [{ type: 'text', text: content }];
  }
  return content.map((part, index): ContentPart => {
    const at = `${path}.content.${index}`;
    const converted: ContentPart =
      role === 'user'
        ? userPart(part, at)
        : { type: 'text', text: textOf(part, at, role, role === 'assistant') };
    // A text or image part's cache breakpoint (Anthropic's prompt caching) goes with it.
    if ((part.type === 'text' || part.type === 'image_url') && part.cache_control !== undefined)
      converted.cacheControl = part.cache_control;
    return converted;
  });
}

/**
 * An assistant turn's `images`, sent back as it was answered: generated images, which Gemini takes
 * back in its model turn (a later turn may edit them) and other protocols leave out.
 */
function generatedImages(images: NonNullable<MessageBody['images']>, path: string): ContentPart[] {
  return images.map((image, index) => {
    const problem = contentUrlProblem(image.image_url.url);
    if (problem) throw invalidParameter(`${path}.images.${index}.image_url.url`, problem);
    return { type: 'image', url: image.image_url.url, generated: true };
  });
}

/** Every message, in order, as canonical items. Throws a 400 naming the message and field. */
export function convertChatMessages(messages: MessageBody[]): InputItem[] {
  const items: InputItem[] = [];
  messages.forEach((message, index) => {
    const path = `body.messages.${index}`;
    switch (message.role) {
      case 'system':
      case 'developer':
      case 'user':
        items.push({ type: 'message', role: message.role, content: contentOf(message, path) });
        return;
      case 'assistant': {
        let content = contentOf(message, path);
        // A refusal sent back as it was answered (`content: null, refusal: "…"`) is what the
        // assistant said, as a refusal part in the content already is.
        const refusal = (message as { refusal?: unknown }).refusal;
        if (content.length === 0 && typeof refusal === 'string' && refusal !== '')
          content = [{ type: 'text', text: refusal }];
        // The images it generated follow its text, as the answer gave them.
        if (message.images?.length) content = [...content, ...generatedImages(message.images, path)];
        const calls = message.tool_calls ?? [];
        const turnStart = items.length;
        // An empty assistant turn says nothing, and some upstreams refuse empty content: skip it.
        if (content.length > 0) items.push({ type: 'message', role: 'assistant', content });
        for (const call of calls) {
          items.push({
            type: 'function-call',
            callId: call.id,
            name: call.function.name,
            arguments: call.function.arguments,
          });
        }
        if (message.reasoning_details)
          attachReasoningDetails(message.reasoning_details, items.slice(turnStart));
        return;
      }
      case 'tool': {
        if (message.tool_call_id === undefined)
          throw invalidParameter(`${path}.tool_call_id`, 'is required for tool messages');
        const parts = contentOf(message, path);
        const output = parts.map((part) => (part as { text: string }).text).join('');
        const cacheControl = parts.find((part) => part.cacheControl !== undefined)?.cacheControl;
        items.push({
          type: 'function-call-output',
          callId: message.tool_call_id,
          output,
          ...(cacheControl !== undefined ? { cacheControl } : {}),
        });
        return;
      }
    }
  });
  // Only empty assistant turns: nothing to send (and providers refuse an empty conversation).
  if (items.length === 0)
    throw invalidParameter('body.messages', 'must contain at least one message with content');
  return items;
}

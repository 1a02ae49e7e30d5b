import type {
  CacheControl,
  ContentPart,
  InputItem,
  ReasoningBlock,
} from '../../../spec/generation-request.js';
import { invalidParameter } from '../shared/invalid-parameter.js';
import { isBase64 } from '../shared/request-rules.js';
import type { MessagesBody, MessagesContentBlock } from './messages-body-schema.js';
import { readMessagesOpaque } from './messages-wire.js';

type Message = MessagesBody['messages'][number];
type BlockOf<Type extends MessagesContentBlock['type']> = Extract<MessagesContentBlock, { type: Type }>;

/** A base64 source's data must be base64: garbage would reach the provider, to fail far from its cause. */
function checkBase64(source: { type: string; data?: unknown }, path: string): void {
  if (source.type === 'base64' && typeof source.data === 'string' && !isBase64(source.data))
    throw invalidParameter(`${path}.source.data`, 'must be base64 data');
}

function imagePart(block: BlockOf<'image'>, path: string): ContentPart {
  const { source } = block;
  checkBase64(source, path);
  return source.type === 'base64'
    ? { type: 'image', url: `data:${source.media_type};base64,${source.data}` }
    : { type: 'image', url: source.url };
}

/**
 * Documents become file parts. Anthropic's base64 and URL documents are PDFs; a plain-text
 * document travels as a text/plain data URL, which the Anthropic adapter turns back into a text
 * document and other protocols read as a file.
 */
function documentPart(block: BlockOf<'document'>, path: string): ContentPart {
  const { source } = block;
  checkBase64(source, path);
  const part: Extract<ContentPart, { type: 'file' }> =
    source.type === 'base64'
      ? { type: 'file', url: `data:application/pdf;base64,${source.data}`, mediaType: 'application/pdf' }
      : source.type === 'url'
        ? { type: 'file', url: source.url, mediaType: 'application/pdf' }
        : {
            type: 'file',
            url: `data:text/plain;base64,${Buffer.from(source.data).toString('base64')}`,
            mediaType: 'text/plain',
          };
  if (typeof block.title === 'string' && block.title !== '') part.filename = block.title;
  return part;
}

/** A block's cache breakpoint, carried on what it became. */
function cached<T extends { cacheControl?: CacheControl }>(
  item: T,
  block: { cache_control?: CacheControl },
): T {
  if (block.cache_control !== undefined) item.cacheControl = block.cache_control;
  return item;
}

/**
 * A tool result: its text blocks are paragraphs of the output, its image and document blocks the
 * output's media, and `is_error` says the tool failed.
 */
function toolResult(
  block: BlockOf<'tool_result'>,
  path: string,
): Extract<InputItem, { type: 'function-call-output' }> {
  const result: Extract<InputItem, { type: 'function-call-output' }> = {
    type: 'function-call-output',
    callId: block.tool_use_id,
    output: '',
  };
  const { content } = block;
  if (typeof content === 'string') result.output = content;
  else if (content !== undefined) {
    const texts: string[] = [];
    const media: ContentPart[] = [];
    content.forEach((part, index) => {
      if (part.type === 'text') texts.push(part.text);
      else if (part.type === 'image') media.push(cached(imagePart(part, `${path}.content.${index}`), part));
      else media.push(cached(documentPart(part, `${path}.content.${index}`), part));
      // A breakpoint on the result's text moves to the result itself, which ends with that text.
      if (part.type === 'text' && part.cache_control !== undefined) result.cacheControl = part.cache_control;
    });
    result.output = texts.join('\n');
    if (media.length > 0) result.media = media;
  }
  if (block.is_error) result.isError = true;
  return result;
}

/**
 * One Anthropic turn as canonical items, in order: runs of text, image and document blocks become
 * messages of the turn's role, each `tool_use` a function call and each `tool_result` a function
 * output between them. Tool calls belong to the assistant and results to the user, as Anthropic
 * requires. Thinking blocks travel as the `reasoning` of the item that follows them; a signature
 * with another provider's format ahead of it (`google-gemini-v1:…`, as the gateway renders one) is
 * read as that provider's.
 */
function convertMessage(message: Message, at: string, items: InputItem[]): void {
  const { role } = message;
  if (typeof message.content === 'string') {
    items.push({ type: 'message', role, content: [{ type: 'text', text: message.content }] });
    return;
  }
  const turnStart = items.length;
  let parts: ContentPart[] = [];
  // Thinking blocks of an assistant turn travel with the content that follows them, signatures
  // and all: Anthropic refuses a tool-using turn sent back without them while thinking is on.
  let reasoning: ReasoningBlock[] = [];
  const withReasoning = <T extends InputItem>(item: T): T => {
    if (reasoning.length === 0) return item;
    const taken = reasoning;
    reasoning = [];
    return { ...item, reasoning: taken };
  };
  const flush = () => {
    if (parts.length > 0) items.push(withReasoning({ type: 'message', role, content: parts }));
    parts = [];
  };
  message.content.forEach((block, index) => {
    switch (block.type) {
      case 'text':
        parts.push(cached<ContentPart>({ type: 'text', text: block.text }, block));
        break;
      case 'image':
        parts.push(cached(imagePart(block, `${at}.content.${index}`), block));
        break;
      case 'document':
        parts.push(cached(documentPart(block, `${at}.content.${index}`), block));
        break;
      case 'tool_use':
        if (role !== 'assistant') {
          throw invalidParameter(
            `${at}.content.${index}.type`,
            'tool_use is only allowed in assistant messages',
          );
        }
        flush();
        items.push(
          withReasoning(
            cached<Extract<InputItem, { type: 'function-call' }>>(
              {
                type: 'function-call',
                callId: block.id,
                name: block.name,
                arguments: JSON.stringify(block.input ?? {}),
              },
              block,
            ),
          ),
        );
        break;
      case 'tool_result':
        if (role !== 'user') {
          throw invalidParameter(
            `${at}.content.${index}.type`,
            'tool_result is only allowed in user messages',
          );
        }
        flush();
        items.push(cached(toolResult(block, `${at}.content.${index}`), block));
        break;
      case 'thinking': {
        if (role !== 'assistant') break;
        flush();
        if (block.signature === undefined) {
          reasoning.push({ text: block.thinking });
          break;
        }
        const signed = readMessagesOpaque(block.signature);
        reasoning.push({ text: block.thinking, signature: signed.value, format: signed.format });
        break;
      }
      case 'redacted_thinking': {
        if (role !== 'assistant') break;
        flush();
        const redacted = readMessagesOpaque(block.data);
        reasoning.push({ text: '', redactedData: redacted.value, format: redacted.format });
        break;
      }
    }
  });
  flush();
  // Reasoning with nothing after it in its turn has nothing to travel with and is dropped (an
  // empty assistant turn would trouble other providers), but for a Gemini text's signature, which
  // streams after its text and goes back with it.
  const last = items.length > turnStart ? items.at(-1) : undefined;
  if (reasoning.length > 0 && last?.type === 'message' && last.role === 'assistant') {
    const signed = reasoning.filter((block) => block.format === 'google-gemini-v1');
    if (signed.length > 0) last.reasoning = [...(last.reasoning ?? []), ...signed];
  }
}

/** The body's `messages` as canonical input items. */
export function convertMessagesInput(messages: Message[]): InputItem[] {
  const items: InputItem[] = [];
  messages.forEach((message, index) => {
    convertMessage(message, `body.messages.${index}`, items);
  });
  return items;
}

/** The `system` prompt as one instruction text; blocks are sections of it. */
export function systemInstructions(system: MessagesBody['system']): string | undefined {
  if (system === undefined) return undefined;
  const text = typeof system === 'string' ? system : system.map((block) => block.text).join('\n\n');
  return text === '' ? undefined : text;
}

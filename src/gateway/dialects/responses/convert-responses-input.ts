import {
  type ContentPart,
  type InputItem,
  type ReasoningBlock,
  reasoningFormatOf,
} from '../../../spec/generation-request.js';
import { invalidParameter } from '../shared/invalid-parameter.js';
import { opaqueBlock, readLabelled } from '../shared/labelled-reasoning.js';
import { contentUrlProblem, isBase64 } from '../shared/request-rules.js';
import type { ResponsesInputItem } from './responses-body-schema.js';

/**
 * `input` → canonical input items. Ajv has only checked that `input` is text or an array of
 * objects; every item rule is checked here so the 400 can name the exact item and field
 * (`body.input.2.content.0.image_url is required`).
 *
 * Accepted: messages (`type` absent or `message`; roles user, assistant, system, developer;
 * content as text or parts), `function_call`, `function_call_output`, and `image_generation_call`
 * (an image a model generated, as this gateway answers it: an assistant turn holding the image,
 * so that the usual stateless pattern of sending `output` back as `input` works). A `reasoning` item from an
 * earlier turn travels as the `reasoning` of the message or function call after it, with what the
 * provider signed (`signature`, `encrypted_content`, `format`), so that a provider that wants its
 * reasoning back gets it; one followed by neither is dropped.
 */
export function convertResponsesInput(input: string | ResponsesInputItem[]): InputItem[] {
  if (typeof input === 'string') {
    if (input.length === 0) throw invalidParameter('body.input', 'must not be empty');
    return [{ type: 'message', role: 'user', content: [{ type: 'text', text: input }] }];
  }
  if (input.length === 0) throw invalidParameter('body.input', 'must not be empty');
  const items: InputItem[] = [];
  let reasoning: ReasoningBlock[] = [];
  /** Reasoning no assistant item follows: a Gemini text's signature goes with the text before it. */
  const leftOver = () => {
    const last = items.at(-1);
    const signed = reasoning.filter((block) => block.format === 'google-gemini-v1');
    if (last?.type === 'message' && last.role === 'assistant' && signed.length > 0)
      last.reasoning = [...(last.reasoning ?? []), ...signed];
    reasoning = [];
  };
  input.forEach((item, index) => {
    const path = `body.input.${index}`;
    if (item.type === 'reasoning') {
      const block = reasoningBlock(item, path);
      if (block) reasoning.push(block);
      return;
    }
    const converted = convertItem(item, path);
    if (!converted) return;
    if (reasoning.length > 0) {
      const answers =
        converted.type === 'function-call' ||
        (converted.type === 'message' && converted.role === 'assistant');
      if (answers) {
        converted.reasoning = reasoning;
        reasoning = [];
      } else leftOver();
    }
    items.push(converted);
  });
  if (reasoning.length > 0) leftOver();
  if (items.length === 0) throw invalidParameter('body.input', 'must contain at least one message');
  return items;
}

const ROLES = ['user', 'assistant', 'system', 'developer'] as const;
type Role = (typeof ROLES)[number];

function convertItem(item: ResponsesInputItem, path: string): InputItem | null {
  const type = item.type;
  if (type === undefined || type === 'message') return convertMessage(item, path);
  switch (type) {
    case 'function_call':
      return {
        type: 'function-call',
        callId: requiredText(item, 'call_id', path),
        name: requiredText(item, 'name', path),
        arguments: text(item, 'arguments', path),
      };
    case 'function_call_output':
      return {
        type: 'function-call-output',
        callId: requiredText(item, 'call_id', path),
        output: functionOutput(item.output, `${path}.output`),
      };
    case 'image_generation_call':
      return generatedImageTurn(item, path);
    case 'item_reference':
      throw invalidParameter(
        `${path}.type`,
        "'item_reference' is not supported: responses are not stored, send the item itself",
      );
    default:
      throw invalidParameter(
        `${path}.type`,
        `${JSON.stringify(type)} is not supported; use message, function_call, function_call_output or image_generation_call`,
      );
  }
}

/**
 * An `image_generation_call` item sent back: an assistant turn holding its image (`result`, base64)
 * as a generated image, which Gemini takes back in its model turn (a later turn may edit it) and
 * other protocols leave out. An item without a result (one still in progress, or failed) holds no
 * image and is left out. The item has no media type: the data's first bytes tell it.
 */
function generatedImageTurn(item: ResponsesInputItem, path: string): InputItem | null {
  const result = optionalText(item, 'result', path);
  if (!result) return null;
  if (!isBase64(result)) throw invalidParameter(`${path}.result`, 'must be base64 data');
  return {
    type: 'message',
    role: 'assistant',
    content: [{ type: 'image', url: `data:${imageMediaType(result)};base64,${result}`, generated: true }],
  };
}

/** The media type base64 image data starts with the signature of; PNG, Gemini's usual, otherwise. */
function imageMediaType(base64: string): string {
  if (base64.startsWith('/9j/')) return 'image/jpeg';
  if (base64.startsWith('R0lGOD')) return 'image/gif';
  if (base64.startsWith('UklGR')) return 'image/webp';
  return 'image/png';
}

/**
 * A reasoning item sent back: its text (`content`'s reasoning_text parts) with Anthropic's
 * `signature`, or its `encrypted_content` (Gemini's thought signature, anyone else's redacted
 * reasoning). Unsigned reasoning carries nothing a provider reads back, and is left out.
 */
function reasoningBlock(item: ResponsesInputItem, path: string): ReasoningBlock | undefined {
  const signature = optionalText(item, 'signature', path) || undefined;
  const encrypted = optionalText(item, 'encrypted_content', path) || undefined;
  const given = reasoningFormatOf(optionalText(item, 'format', path));
  if (signature === undefined && encrypted === undefined) return undefined;
  if (encrypted !== undefined) {
    // Its label says whose it is even where the client dropped `format`; unlabelled and
    // unformatted, it is nobody's (OpenAI's own, say) and no provider is sent it.
    const read = readLabelled(encrypted);
    return opaqueBlock(read.value, read.format ?? given ?? 'unknown');
  }
  const format = given ?? 'unknown';
  const content = item.content;
  if (content !== undefined && content !== null && !Array.isArray(content))
    throw invalidParameter(`${path}.content`, 'must be an array of reasoning_text parts');
  const text = (content ?? [])
    .map((part, index) => {
      const partPath = `${path}.content.${index}`;
      if (!isObject(part)) throw invalidParameter(partPath, 'must be object');
      return part.type === 'reasoning_text' ? (optionalText(part, 'text', partPath) ?? '') : '';
    })
    .join('');
  return { text, signature, format };
}

function convertMessage(item: ResponsesInputItem, path: string): InputItem | null {
  const role = item.role;
  if (role === undefined) throw invalidParameter(`${path}.role`, 'is required');
  if (!ROLES.includes(role as Role))
    throw invalidParameter(`${path}.role`, `must be one of: ${ROLES.join(', ')}`);
  const content = item.content;
  if (typeof content === 'string') {
    return { type: 'message', role: role as Role, content: [{ type: 'text', text: content }] };
  }
  // An assistant turn that only carried tool calls may come back with null content.
  if ((content === null || content === undefined) && role === 'assistant') return null;
  if (!Array.isArray(content)) {
    throw invalidParameter(`${path}.content`, 'must be a string or an array of content parts');
  }
  return {
    type: 'message',
    role: role as Role,
    content: content.map((part, index) => convertPart(part, `${path}.content.${index}`)),
  };
}

const PART_TYPES = ['input_text', 'input_image', 'input_file', 'input_audio', 'output_text', 'refusal'];

function convertPart(part: unknown, path: string): ContentPart {
  if (!isObject(part)) throw invalidParameter(path, 'must be object');
  switch (part.type) {
    case 'input_text':
    case 'output_text':
      return { type: 'text', text: text(part, 'text', path) };
    case 'refusal':
      return { type: 'text', text: text(part, 'refusal', path) };
    case 'input_image':
      return convertImage(part, path);
    case 'input_file':
      return convertFile(part, path);
    case 'input_audio': {
      const audio = part.input_audio;
      if (!isObject(audio)) throw invalidParameter(`${path}.input_audio`, 'is required');
      const data = requiredText(audio, 'data', `${path}.input_audio`);
      if (!isBase64(data)) throw invalidParameter(`${path}.input_audio.data`, 'must be base64 data');
      return { type: 'audio', data, format: requiredText(audio, 'format', `${path}.input_audio`) };
    }
    default:
      if (part.type === undefined) throw invalidParameter(`${path}.type`, 'is required');
      throw invalidParameter(`${path}.type`, `must be one of: ${PART_TYPES.join(', ')}`);
  }
}

const DETAILS = ['auto', 'low', 'high', 'original'];

function convertImage(part: Record<string, unknown>, path: string): ContentPart {
  const url = part.image_url;
  if (typeof url !== 'string' || url.length === 0) {
    if (part.file_id != null) {
      throw invalidParameter(
        `${path}.file_id`,
        'is not supported: send the image as image_url (an https or data URL)',
      );
    }
    throw invalidParameter(`${path}.image_url`, 'is required');
  }
  const problem = contentUrlProblem(url);
  if (problem) throw invalidParameter(`${path}.image_url`, problem);
  const detail = part.detail;
  if (detail === undefined || detail === null) return { type: 'image', url };
  if (typeof detail !== 'string' || !DETAILS.includes(detail)) {
    throw invalidParameter(`${path}.detail`, `must be one of: ${DETAILS.join(', ')}`);
  }
  // `original` (full resolution) has no canonical level; `high` is the closest one.
  return { type: 'image', url, detail: detail === 'original' ? 'high' : (detail as 'auto' | 'low' | 'high') };
}

const MEDIA_TYPES: Record<string, string> = {
  pdf: 'application/pdf',
  txt: 'text/plain',
  md: 'text/markdown',
  csv: 'text/csv',
  json: 'application/json',
  html: 'text/html',
};

function convertFile(part: Record<string, unknown>, path: string): ContentPart {
  const filename = optionalText(part, 'filename', path);
  const named = filename ? { filename } : {};
  if (typeof part.file_data === 'string' && part.file_data.length > 0) {
    const data = part.file_data;
    if (data.startsWith('data:')) {
      const problem = contentUrlProblem(data);
      if (problem) throw invalidParameter(`${path}.file_data`, problem);
      const mediaType = /^data:([^;,]+)/.exec(data)?.[1];
      return { type: 'file', url: data, ...(mediaType ? { mediaType } : {}), ...named };
    }
    // Bare base64, as some clients send it: the type comes from the file name, PDF when unknown.
    if (!isBase64(data)) throw invalidParameter(`${path}.file_data`, 'must be a data: URL or base64 data');
    const extension = filename?.split('.').pop()?.toLowerCase() ?? '';
    const mediaType = MEDIA_TYPES[extension] ?? 'application/pdf';
    return { type: 'file', url: `data:${mediaType};base64,${data}`, mediaType, ...named };
  }
  if (typeof part.file_url === 'string' && part.file_url.length > 0) {
    const problem = contentUrlProblem(part.file_url);
    if (problem) throw invalidParameter(`${path}.file_url`, problem);
    return { type: 'file', url: part.file_url, ...named };
  }
  if (part.file_id != null) {
    throw invalidParameter(`${path}.file_id`, 'is not supported: send the file as file_data or file_url');
  }
  throw invalidParameter(path, 'must have file_data or file_url');
}

/** A function's result as text: a string, or the text parts of an array joined. */
function functionOutput(output: unknown, path: string): string {
  if (typeof output === 'string') return output;
  if (!Array.isArray(output))
    throw invalidParameter(path, 'must be a string or an array of input_text parts');
  return output
    .map((part, index) => {
      const partPath = `${path}.${index}`;
      if (!isObject(part)) throw invalidParameter(partPath, 'must be object');
      if (part.type !== 'input_text' && part.type !== 'output_text') {
        throw invalidParameter(
          `${partPath}.type`,
          'is not supported in a function_call_output; only input_text is',
        );
      }
      return text(part, 'text', partPath);
    })
    .join('');
}

function text(item: Record<string, unknown>, field: string, path: string): string {
  const value = item[field];
  if (value === undefined) throw invalidParameter(`${path}.${field}`, 'is required');
  if (typeof value !== 'string') throw invalidParameter(`${path}.${field}`, 'must be string');
  return value;
}

function requiredText(item: Record<string, unknown>, field: string, path: string): string {
  const value = text(item, field, path);
  if (value.length === 0) throw invalidParameter(`${path}.${field}`, 'must not be empty');
  return value;
}

function optionalText(item: Record<string, unknown>, field: string, path: string): string | undefined {
  const value = item[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalidParameter(`${path}.${field}`, 'must be string');
  return value;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

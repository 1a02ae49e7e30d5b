import type { FinishReason } from '../../../spec/finish-reason.js';
import type { ReasoningBlock } from '../../../spec/generation-request.js';
import type { StreamPart } from '../../../spec/stream-part.js';
import type { GenerationFailure, GenerationInfo, GenerationSummary, StreamEncoder } from '../dialect.js';
import {
  CUT_AT_MAX_OUTPUT_TOKENS,
  echoRequest,
  type FunctionCallItem,
  finishedResponse,
  type ImageGenerationCallItem,
  type ItemStatus,
  inProgressResponse,
  itemIds,
  lastItemStatus,
  type MessageItem,
  type Outcome,
  type OutputItem,
  outcomeOfFinish,
  type ReasoningItem,
  type ReasoningSeal,
  type ResponseEcho,
  sealOf,
} from './response-object.js';
import type { ResponsesBody } from './responses-body-schema.js';
import { isLengthFailure, responsesErrorCode } from './responses-errors.js';

/**
 * Canonical stream parts → the Responses event stream (reference §1.3): `data: <json>` frames
 * only, each event numbered by `sequence_number` from 0, ending with `data: [DONE]`.
 *
 * One output item is open at a time. Reasoning opens a `reasoning` item (its text travels as
 * `reasoning_text`), text opens a `message`, each tool call a `function_call`; when another item
 * starts, the open one is closed with its done events. A generated image is an
 * `image_generation_call` item written whole where it came (it arrives whole). A tool call that starts while another call
 * is still open is held back (its arguments collected) until that one ends: an upstream may stream
 * several calls' arguments interleaved, and closing a call at the next one's start had sent its
 * `function_call_arguments.done` and `output_item.done` with arguments still to come. The final `response.completed`
 * (`incomplete`, `failed`) carries every item again, with usage and cost. Delta frames are built
 * as strings around one `JSON.stringify` of the delta: this runs once per upstream chunk.
 */
export function createResponsesStreamEncoder(body: ResponsesBody, info: GenerationInfo): StreamEncoder {
  return new ResponsesStreamEncoder(echoRequest(body), info);
}

interface OpenText {
  /** A `refusal` is a message item whose content is a refusal part (`response.refusal.*` events). */
  kind: 'message' | 'reasoning' | 'refusal';
  id: string;
  /** The id as JSON, spliced into every delta frame. */
  idJson: string;
  outputIndex: number;
  text: string;
  /** A reasoning item's signature or opaque content, which closes it. */
  seal?: ReasoningSeal;
}

interface OpenCall {
  kind: 'function_call';
  idJson: string;
  outputIndex: number;
  index: number;
  item: FunctionCallItem;
}

type OpenItem = OpenText | OpenCall;

/** A call that started while another was open: its arguments collect until it opens. */
interface HeldCall {
  index: number;
  item: FunctionCallItem;
  ended: boolean;
}

const DONE = 'data: [DONE]\n\n';

class ResponsesStreamEncoder implements StreamEncoder {
  readonly #echo: ResponseEcho;
  readonly #info: GenerationInfo;
  readonly #ids: ReturnType<typeof itemIds>;
  #sequence = 0;
  /** Closed items, in output order. */
  readonly #output: OutputItem[] = [];
  #outputText = '';
  #open: OpenItem | null = null;
  #messages = 0;
  #reasonings = 0;
  #images = 0;
  /** Every tool call by its stream index, kept after closing so a late delta still counts. */
  readonly #calls = new Map<number, FunctionCallItem>();
  /** Calls started while another call was open, in the order they started. */
  readonly #held: HeldCall[] = [];
  #finish: FinishReason | null = null;
  #ended = false;

  constructor(echo: ResponseEcho, info: GenerationInfo) {
    this.#echo = echo;
    this.#info = info;
    this.#ids = itemIds(info.id);
  }

  start(): string {
    const response = JSON.stringify(inProgressResponse(this.#info, this.#echo));
    return this.#lifecycle('response.created', response) + this.#lifecycle('response.in_progress', response);
  }

  part(part: StreamPart): string {
    if (this.#ended) return '';
    switch (part.type) {
      case 'text-delta':
        return part.delta ? this.#textDelta('message', part.delta) : '';
      case 'reasoning-delta':
        return part.delta ? this.#textDelta('reasoning', part.delta) : '';
      case 'refusal-delta':
        return part.delta ? this.#textDelta('refusal', part.delta) : '';
      case 'reasoning-signature':
        return this.#seal({ text: '', signature: part.signature, format: part.format });
      case 'reasoning-redacted':
        return this.#seal({ text: '', redactedData: part.data, format: part.format });
      case 'image-output':
        return this.#image(part.data);
      case 'tool-call-start':
        return this.#callStart(part.index, part.callId, part.name);
      case 'tool-call-delta':
        return this.#callDelta(part.index, part.argumentsDelta);
      case 'tool-call-end':
        return this.#callEnd(part.index);
      case 'finish':
        this.#finish = part.reason;
        return '';
      default:
        // response-metadata and usage are known from the summary at the end; an error part
        // reaches the client through fail().
        return '';
    }
  }

  end(summary: GenerationSummary): string {
    return this.#ended ? '' : this.#terminate(outcomeOfFinish(this.#finish), summary);
  }

  fail(failure: GenerationFailure, summary: GenerationSummary): string {
    if (this.#ended) return '';
    const outcome: Outcome = isLengthFailure(failure)
      ? CUT_AT_MAX_OUTPUT_TOKENS
      : {
          status: 'failed',
          incompleteDetails: null,
          error: { code: responsesErrorCode(failure.errorType), message: failure.message },
          errorType: failure.errorType,
        };
    return this.#terminate(outcome, summary);
  }

  #terminate(outcome: Outcome, summary: GenerationSummary): string {
    const status = lastItemStatus(outcome);
    const closing = this.#close(status) + this.#releaseHeld(status);
    this.#ended = true;
    const response = finishedResponse({
      info: this.#info,
      echo: this.#echo,
      outcome,
      output: this.#output,
      outputText: this.#outputText,
      summary,
    });
    return `${closing}${this.#lifecycle(`response.${outcome.status}`, JSON.stringify(response))}${DONE}`;
  }

  #textDelta(kind: OpenText['kind'], delta: string): string {
    let frames = '';
    const current = this.#open;
    let open: OpenText;
    if (current && current.kind !== 'function_call' && current.kind === kind) {
      open = current;
    } else {
      frames = this.#close('completed') + this.#releaseHeld('completed');
      const opened = this.#openText(kind);
      frames += opened.frames;
      open = opened.item;
    }
    open.text += delta;
    if (kind === 'message') {
      this.#outputText += delta;
      return `${frames}data: {"type":"response.output_text.delta","sequence_number":${this.#sequence++},"item_id":${open.idJson},"output_index":${open.outputIndex},"content_index":0,"delta":${JSON.stringify(delta)},"logprobs":[]}\n\n`;
    }
    if (kind === 'refusal')
      return `${frames}data: {"type":"response.refusal.delta","sequence_number":${this.#sequence++},"item_id":${open.idJson},"output_index":${open.outputIndex},"content_index":0,"delta":${JSON.stringify(delta)}}\n\n`;
    return `${frames}data: {"type":"response.reasoning_text.delta","sequence_number":${this.#sequence++},"item_id":${open.idJson},"output_index":${open.outputIndex},"content_index":0,"delta":${JSON.stringify(delta)}}\n\n`;
  }

  /**
   * A signature (or redacted block) closes the reasoning streamed since the last one: the open
   * reasoning item, or an empty one opened for it (Gemini signs a function call, not a thought).
   */
  #seal(block: ReasoningBlock): string {
    const seal = sealOf(block);
    if (!seal) return '';
    let frames = '';
    let open = this.#open;
    if (open?.kind !== 'reasoning') {
      frames = this.#close('completed') + this.#releaseHeld('completed');
      const opened = this.#openText('reasoning');
      frames += opened.frames;
      open = opened.item;
    }
    open.seal = seal;
    return frames + this.#close('completed');
  }

  #openText(kind: OpenText['kind']): { item: OpenText; frames: string } {
    const id =
      kind === 'reasoning' ? this.#ids.reasoning(this.#reasonings++) : this.#ids.message(this.#messages++);
    const item: OpenText = {
      kind,
      id,
      idJson: JSON.stringify(id),
      outputIndex: this.#output.length,
      text: '',
    };
    this.#open = item;
    const added: MessageItem | ReasoningItem =
      kind === 'reasoning'
        ? { type: 'reasoning', id, status: 'in_progress', summary: [], content: [] }
        : { type: 'message', id, role: 'assistant', status: 'in_progress', content: [] };
    const part =
      kind === 'message'
        ? { type: 'output_text', text: '', annotations: [] }
        : kind === 'refusal'
          ? { type: 'refusal', refusal: '' }
          : { type: 'reasoning_text', text: '' };
    const frames =
      this.#event('response.output_item.added', { output_index: item.outputIndex, item: added }) +
      this.#event('response.content_part.added', {
        item_id: id,
        output_index: item.outputIndex,
        content_index: 0,
        part,
      });
    return { item, frames };
  }

  /**
   * A generated image, after the open item closes: its item with the events OpenAI sends for one
   * (added without the data, in_progress, generating, completed, done with the data as `result`),
   * all at once, since the image came whole; no partial images.
   */
  #image(data: string): string {
    const frames = this.#close('completed') + this.#releaseHeld('completed');
    const outputIndex = this.#output.length;
    const id = this.#ids.imageGeneration(this.#images++);
    const where = { item_id: id, output_index: outputIndex };
    const added: ImageGenerationCallItem = {
      type: 'image_generation_call',
      id,
      status: 'in_progress',
      result: null,
    };
    const item: ImageGenerationCallItem = { ...added, status: 'completed', result: data };
    this.#output.push(item);
    return (
      frames +
      this.#event('response.output_item.added', { output_index: outputIndex, item: added }) +
      this.#event('response.image_generation_call.in_progress', where) +
      this.#event('response.image_generation_call.generating', where) +
      this.#event('response.image_generation_call.completed', where) +
      this.#event('response.output_item.done', { output_index: outputIndex, item })
    );
  }

  #callStart(index: number, callId: string, name: string): string {
    if (this.#calls.has(index)) return '';
    const item: FunctionCallItem = {
      type: 'function_call',
      id: this.#ids.functionCall(index),
      call_id: callId,
      name,
      arguments: '',
      status: 'in_progress',
    };
    this.#calls.set(index, item);
    if (this.#open?.kind === 'function_call') {
      this.#held.push({ index, item, ended: false });
      return '';
    }
    return this.#close('completed') + this.#openCall(index, item);
  }

  #openCall(index: number, item: FunctionCallItem): string {
    const outputIndex = this.#output.length;
    const open: OpenCall = {
      kind: 'function_call',
      idJson: JSON.stringify(item.id),
      outputIndex,
      index,
      item,
    };
    this.#open = open;
    const added = this.#event('response.output_item.added', {
      output_index: outputIndex,
      item: { ...item, arguments: '' },
    });
    return item.arguments ? added + this.#argumentsDelta(open, item.arguments) : added;
  }

  #argumentsDelta(open: OpenCall, delta: string): string {
    return `data: {"type":"response.function_call_arguments.delta","sequence_number":${this.#sequence++},"item_id":${open.idJson},"output_index":${open.outputIndex},"delta":${JSON.stringify(delta)}}\n\n`;
  }

  #callDelta(index: number, delta: string): string {
    const open = this.#open;
    if (open?.kind === 'function_call' && open.index === index) {
      if (!delta) return '';
      open.item.arguments += delta;
      return this.#argumentsDelta(open, delta);
    }
    // A call held back collects its arguments until it opens. One already closed (text started
    // since): its events are written, so the arguments only complete the final response.
    const call = this.#calls.get(index);
    if (call) call.arguments += delta;
    return '';
  }

  /** Ends a call: the open one closes, and the calls held behind it open in turn. */
  #callEnd(index: number): string {
    const open = this.#open;
    if (open?.kind === 'function_call' && open.index === index) {
      let frames = this.#close('completed');
      while (this.#held.length > 0) {
        const next = this.#held.shift() as HeldCall;
        frames += this.#openCall(next.index, next.item);
        if (!next.ended) break;
        frames += this.#close('completed');
      }
      return frames;
    }
    const held = this.#held.find((entry) => entry.index === index);
    if (held) held.ended = true;
    return '';
  }

  /** Opens and closes every call still held back: text started, or the response ended. */
  #releaseHeld(status: ItemStatus): string {
    let frames = '';
    for (const next of this.#held.splice(0))
      frames += this.#openCall(next.index, next.item) + this.#close(status);
    return frames;
  }

  /** Closes the open item with its done events and moves it to the output. */
  #close(status: ItemStatus): string {
    const open = this.#open;
    if (!open) return '';
    this.#open = null;
    const outputIndex = open.outputIndex;
    if (open.kind === 'function_call') {
      const item = open.item;
      item.status = status;
      this.#output.push(item);
      return (
        this.#event('response.function_call_arguments.done', {
          item_id: item.id,
          output_index: outputIndex,
          name: item.name,
          arguments: item.arguments,
        }) + this.#event('response.output_item.done', { output_index: outputIndex, item })
      );
    }
    const { id, text } = open;
    // The item's one content part, and the event that repeats its whole text.
    let item: OutputItem;
    let done: { type: string; fields: Record<string, unknown> };
    let part: Record<string, unknown>;
    if (open.kind === 'reasoning') {
      const reasoning = { type: 'reasoning_text' as const, text };
      item = { type: 'reasoning', id, status, summary: [], content: [reasoning], ...open.seal };
      done = { type: 'response.reasoning_text.done', fields: { text } };
      part = reasoning;
    } else {
      const content =
        open.kind === 'refusal'
          ? { type: 'refusal' as const, refusal: text }
          : { type: 'output_text' as const, text, annotations: [] };
      item = { type: 'message', id, role: 'assistant', status, content: [content] };
      done =
        open.kind === 'refusal'
          ? { type: 'response.refusal.done', fields: { refusal: text } }
          : { type: 'response.output_text.done', fields: { text, logprobs: [] } };
      part = content;
    }
    const where = { item_id: id, output_index: outputIndex, content_index: 0 };
    const frames =
      this.#event(done.type, { ...where, ...done.fields }) +
      this.#event('response.content_part.done', { ...where, part });
    this.#output.push(item);
    return frames + this.#event('response.output_item.done', { output_index: outputIndex, item });
  }

  #event(type: string, fields: Record<string, unknown>): string {
    return `data: ${JSON.stringify({ type, sequence_number: this.#sequence++, ...fields })}\n\n`;
  }

  #lifecycle(type: string, responseJson: string): string {
    return `data: {"type":"${type}","sequence_number":${this.#sequence++},"response":${responseJson}}\n\n`;
  }
}

import { createHash } from 'node:crypto';
import { Type } from 'typebox';
import type { BroadcastEvent, BroadcastMessage } from '../broadcast-event.js';
import { DeliveryError, type SendOutcome } from '../destination-type.js';

/**
 * What the exporters share whatever their wire format: config checks, custom-header merging,
 * ids derived from the idempotency key, size-based batching and the small event mappings that
 * several vendors read the same way.
 */

/** One problem `validate()` reports: the config key and what is wrong with it. */
export interface ConfigProblem {
  field: string;
  message: string;
}

/** The `headers` config field every type accepts (reference §3.1): custom HTTP headers, sent as given. */
export const CustomHeadersSchema = Type.Record(Type.String(), Type.String());

/**
 * The URL rules `format: 'uri'` cannot say: an absolute http(s) URL without credentials in it.
 * A base URL (the default) gets paths appended, so a query or a fragment would end up in the middle
 * of every request URL and is refused too; a `verbatim` URL (a webhook, a collector endpoint) is
 * called as given and may carry a query. Undefined fields (optional, defaulted) are skipped.
 */
export function urlProblems(
  fields: Record<string, string | undefined>,
  options: { verbatim?: boolean } = {},
): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const [field, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    const message = urlProblem(value, options.verbatim ?? false);
    if (message) problems.push({ field, message });
  }
  return problems;
}

function urlProblem(value: string, verbatim: boolean): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute http or https URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an http or https URL';
  if (url.username || url.password) return 'must not carry credentials in the URL';
  if (!verbatim && (url.search || url.hash)) return 'must not carry a query or a fragment';
  return null;
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused
const HEADER_VALUE = /^[^\u0000-\u0008\u000a-\u001f\u007f]*$/;

/** Custom headers the HTTP client would refuse at send time (a bad name, a line break in a value). */
export function headerProblems(headers: Record<string, string> | undefined): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (!HEADER_NAME.test(name))
      problems.push({ field: 'headers', message: `"${name}" is not a valid header name` });
    else if (!HEADER_VALUE.test(value)) {
      problems.push({ field: 'headers', message: `the value of "${name}" contains control characters` });
    }
  }
  return problems;
}

/**
 * The exporter's own headers over the config's custom ones: a custom header whose name (in any
 * case) is one of `own` or of `alsoReserved` is dropped, so custom headers can add to a request but
 * never replace its credentials or content type. `alsoReserved` names headers the exporter sets on
 * some requests only, or that must not appear next to its auth (ClickHouse refuses `Authorization`
 * beside its own user headers).
 */
export function mergeHeaders(
  custom: Record<string, string> | undefined,
  own: Record<string, string>,
  alsoReserved: Iterable<string> = [],
): Record<string, string> {
  const reserved = new Set([...Object.keys(own), ...alsoReserved].map((name) => name.toLowerCase()));
  const kept = Object.entries(custom ?? {}).filter(([name]) => !reserved.has(name.toLowerCase()));
  return { ...Object.fromEntries(kept), ...own };
}

export const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * A canonical lowercase UUID whose bits hash `seed` (the idempotency key plus a label), so every
 * delivery of an item names the same object. Version 4 gives the random-UUID layout most APIs
 * expect; version 8 (RFC 9562 "custom") says honestly that the bits are derived. Either way the
 * variant bits are RFC 9562's. Changing the layout for an exporter would give items already in the
 * outbox new ids on their next retry, and the receiver would store them twice.
 */
export function uuidFromSeed(seed: string, version: 4 | 8 = 4): string {
  const digits = sha256Hex(seed);
  return formatUuid(
    `${digits.slice(0, 12)}${version}${digits.slice(13, 16)}${variantDigit(digits, 16)}${digits.slice(17, 32)}`,
  );
}

/**
 * A valid UUIDv7 (RFC 9562) derived from a seed: the 48-bit millisecond timestamp of `at` (APIs that
 * prefer v7 ids, like LangSmith and Opik, may reject one whose time falls outside their ingestion
 * window, so it must be the event's real time), the version and variant bits, and 74 bits of the
 * seed's SHA-256. The same seed and time always give the same id.
 */
export function uuidV7(at: string, seed: string): string {
  const milliseconds = Math.max(0, Date.parse(at) || 0);
  const timestamp = milliseconds.toString(16).padStart(12, '0').slice(-12);
  const digest = sha256Hex(seed);
  return formatUuid(`${timestamp}7${digest.slice(0, 3)}${variantDigit(digest, 3)}${digest.slice(4, 19)}`);
}

/** RFC 9562 variant `10xx` over the hex digit at `position`. */
const variantDigit = (hex: string, position: number) =>
  ((Number.parseInt(hex.charAt(position), 16) & 0x3) | 0x8).toString(16);

const formatUuid = (hex: string) =>
  `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;

/** Consecutive items `[start, end)` of a batch that travel in one request. */
export interface ItemRange {
  start: number;
  end: number;
}

/**
 * Splits serialized items into consecutive groups whose bodies stay under `limit` bytes. An item
 * bigger than the limit travels alone, so the receiver's refusal costs only that item.
 */
export function packBySize(fragments: readonly string[], limit: number): ItemRange[] {
  const groups: ItemRange[] = [];
  let start = 0;
  let size = 0;
  fragments.forEach((fragment, index) => {
    const bytes = Buffer.byteLength(fragment) + 1;
    if (index > start && size + bytes > limit) {
      groups.push({ start, end: index });
      start = index;
      size = 0;
    }
    size += bytes;
  });
  if (fragments.length > 0) groups.push({ start, end: fragments.length });
  return groups;
}

/**
 * Sends each group in turn and stops at the first that fails, as `sendChunks` does for OTLP: a
 * receiver that refused one request (over load, rate-limited) is not sent the rest of the batch
 * at once. One group: its failure is the batch's (thrown). Several: the failure is returned as
 * `stopped` — the failed group's items, and the later groups' as unsent — so the worker applies it
 * (status, `Retry-After`, the destination's pause) to the failed items alone and sends the unsent
 * ones next without counting an attempt; items earlier groups' answers refused stay `rejected`.
 */
export async function sendInGroups(
  groups: readonly ItemRange[],
  sendGroup: (group: ItemRange) => Promise<SendOutcome | undefined>,
): Promise<SendOutcome | undefined> {
  if (groups.length === 1) return sendGroup(groups[0] as ItemRange);
  const rejected: NonNullable<SendOutcome['rejected']> = [];
  const indexes = ({ start, end }: ItemRange) => Array.from({ length: end - start }, (_, at) => start + at);
  const after = (position: number) => groups.slice(position + 1).flatMap(indexes);
  for (const [position, group] of groups.entries()) {
    let outcome: SendOutcome | undefined;
    try {
      outcome = await sendGroup(group);
    } catch (error) {
      if (!(error instanceof DeliveryError)) throw error;
      return { rejected, stopped: { error, failed: indexes(group), unsent: after(position) } };
    }
    rejected.push(...(outcome?.rejected ?? []));
    // A group that stopped part-way: the batch stops there too.
    if (outcome?.stopped) {
      const { error, failed, unsent } = outcome.stopped;
      return { rejected, stopped: { error, failed, unsent: [...unsent, ...after(position)] } };
    }
  }
  return rejected.length > 0 ? { rejected } : undefined;
}

/**
 * A JSON object read from a receiver's answer, or null when the text is not JSON or not an object
 * (an array counts as no object): foreign input is never trusted to have the shape asked for.
 */
export function jsonObject(text: string): Record<string, unknown> | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
    ? (parsed as Record<string, unknown>)
    : null;
}

/** Any UUID (ids users copy from a vendor's UI: a project, a workspace), in either case. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The message in OpenAI chat format, which Langfuse, LangSmith and Braintrust render as a conversation. */
export function toOpenAiMessage(message: BroadcastMessage): object {
  return {
    role: message.role,
    content: message.content,
    tool_calls: message.tool_calls?.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.arguments },
    })),
    tool_call_id: message.tool_call_id,
  };
}

/** The output as OpenAI `choices`, which LangSmith and Braintrust render as the model's answer. */
export function toOpenAiChoices(event: BroadcastEvent): object[] {
  return (event.output ?? []).map((message, index) => ({
    index,
    message: toOpenAiMessage(message),
    finish_reason: event.finish_reason,
  }));
}

/**
 * Span naming of reference §3.3: the most specific name the request gave, else the model that
 * answered, else the one asked for (a generation may fail before any model answers).
 */
export function spanName(event: BroadcastEvent): string {
  const { generation_name, span_name, trace_name } = event.trace;
  return (
    generation_name ?? span_name ?? trace_name ?? event.model ?? event.requested_model ?? event.operation
  );
}

/**
 * The name of the generation's own observation where the vendor names the trace apart (Langfuse,
 * Opik): `trace_name` is the trace's, so it is not used for the observation inside it.
 */
export function observationName(event: BroadcastEvent): string {
  const { generation_name, span_name } = event.trace;
  return generation_name ?? span_name ?? event.model ?? event.requested_model ?? event.operation;
}

/** `type: message` of a failed generation (its status when it has neither); undefined when it did not fail. */
export function errorText(event: BroadcastEvent): string | undefined {
  if (event.status !== 'failed' && !event.error) return undefined;
  const parts = [event.error?.type, event.error?.message].filter((part) => part);
  return parts.length > 0 ? parts.join(': ') : event.status;
}

/** The record without its null fields: receivers that show "null" for absent values get nothing instead. */
export function withoutNulls(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== null));
}

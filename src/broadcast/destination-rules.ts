import { createHash } from 'node:crypto';
import { reportedFinishReason } from '../spec/finish-reason.js';
import type { ObservabilityDestinationTable } from '../storage/database-schema.js';
import type { BroadcastEvent } from './broadcast-event.js';

type TextField =
  | 'model'
  | 'provider'
  | 'session_id'
  | 'user_id'
  | 'api_key_name'
  | 'finish_reason'
  | 'input'
  | 'output';
type NumberField = 'total_cost' | 'total_tokens' | 'prompt_tokens' | 'completion_tokens';

interface StoredRule {
  field: TextField | NumberField;
  operator: string;
  value?: string | number;
}

/** `filter_rules` as stored (defaults applied by the API). */
export interface StoredFilterRules {
  enabled?: boolean;
  groups: Array<{ logic?: 'and' | 'or'; rules: StoredRule[] }>;
}

type Predicate = (event: BroadcastEvent) => boolean;

/** What the request path needs of a destination to decide whether an event goes to it. */
export interface BroadcastTarget {
  id: string;
  type: string;
  /** null: every key of the workspace. */
  keyHashes: ReadonlySet<string> | null;
  regions: ReadonlySet<string>;
  samplingRate: number;
  /** null: no rules, every event passes. */
  matches: Predicate | null;
  privacyMode: boolean;
  cost: boolean;
  identity: boolean;
  requestContext: boolean;
  /**
   * The destination as plain data (its stored rules uncompiled), for a thread that builds events
   * (src/broadcast/outbox-build.ts); absent on a target made without a stored row.
   */
  source?: TargetSource;
}

/** A destination's selection and view as plain data: what a thread needs to make its target. */
export interface TargetSource {
  id: string;
  type: string;
  keyHashes: string[] | null;
  regions: string[];
  samplingRate: number;
  /** The stored `filter_rules` JSON text; null: none. */
  filterRules: string | null;
  privacyMode: boolean;
  cost: boolean;
  identity: boolean;
  requestContext: boolean;
}

const NUMBER_FIELDS = new Set<string>(['total_cost', 'total_tokens', 'prompt_tokens', 'completion_tokens']);

const joined = (messages: BroadcastEvent['input']) =>
  messages === null || messages.length === 0 ? null : messages.map((message) => message.content).join('\n');

/** The texts a field offers; `provider` matches either the slug (`openai`) or the name (`OpenAI`). */
function textsOf(event: BroadcastEvent, field: TextField): string[] {
  const present = (values: Array<string | null>) => values.filter((value): value is string => value !== null);
  switch (field) {
    case 'model':
      return present([event.model ?? event.requested_model]);
    case 'provider':
      return present([event.provider, event.provider_name]);
    case 'session_id':
      return present([event.session_id]);
    case 'user_id':
      return present([event.user_id]);
    case 'api_key_name':
      return present([event.api_key_name]);
    case 'finish_reason':
      return present([event.finish_reason]);
    case 'input':
      return present([joined(event.input)]);
    case 'output':
      return present([joined(event.output)]);
  }
}

function numberOf(event: BroadcastEvent, field: NumberField): number {
  switch (field) {
    case 'total_cost':
      return event.total_cost;
    case 'total_tokens':
      return event.usage.total_tokens;
    case 'prompt_tokens':
      return event.usage.prompt_tokens;
    case 'completion_tokens':
      return event.usage.completion_tokens;
  }
}

/**
 * One rule as a predicate. Text comparisons are case-sensitive; a field that is absent (no session,
 * no output) fails every positive operator and passes the negative ones (`not_equals`,
 * `not_contains`, `not_exists`).
 */
export function compileRule(rule: StoredRule): Predicate {
  const { operator, value } = rule;
  if (NUMBER_FIELDS.has(rule.field)) {
    const field = rule.field as NumberField;
    const target = Number(value);
    switch (operator) {
      case 'exists':
        return () => true;
      case 'not_exists':
        return () => false;
      case 'equals':
        return (event) => numberOf(event, field) === target;
      case 'not_equals':
        return (event) => numberOf(event, field) !== target;
      case 'gt':
        return (event) => numberOf(event, field) > target;
      case 'gte':
        return (event) => numberOf(event, field) >= target;
      case 'lt':
        return (event) => numberOf(event, field) < target;
      case 'lte':
        return (event) => numberOf(event, field) <= target;
      default:
        return () => false;
    }
  }
  const field = rule.field as TextField;
  let text = String(value ?? '');
  // Events spell finish reasons as the API does (tool_calls); a rule saved with the internal
  // spelling events carried before (tool-calls, content-filter, other) still means the same, with
  // every operator: the whole value, or those spellings inside it (a `contains`, a pattern).
  if (field === 'finish_reason') text = reportedFinishReason(text) ?? apiFinishReasonSpelling(text);
  const any =
    (test: (candidate: string) => boolean): Predicate =>
    (event) =>
      textsOf(event, field).some(test);
  const none =
    (test: (candidate: string) => boolean): Predicate =>
    (event) =>
      !textsOf(event, field).some(test);
  switch (operator) {
    case 'exists':
      return any((candidate) => candidate.length > 0);
    case 'not_exists':
      return none((candidate) => candidate.length > 0);
    case 'equals':
      return any((candidate) => candidate === text);
    case 'not_equals':
      return none((candidate) => candidate === text);
    case 'contains':
      return any((candidate) => candidate.includes(text));
    case 'not_contains':
      return none((candidate) => candidate.includes(text));
    case 'starts_with':
      return any((candidate) => candidate.startsWith(text));
    case 'ends_with':
      return any((candidate) => candidate.endsWith(text));
    case 'regex': {
      // Patterns were checked for catastrophic backtracking when the destination was saved.
      const pattern = new RegExp(text, 'u');
      return any((candidate) => pattern.test(candidate));
    }
    default:
      // Numeric operators on a text field are refused when saved; nothing stored reaches here.
      return () => false;
  }
}

/**
 * `filter_rules` as one predicate: within a group, rules combine by its `logic` (and by default);
 * groups combine with OR — an event is forwarded when at least one group matches. Disabled rules
 * (`enabled: false`) or no groups forward everything.
 */
export function compileFilterRules(rules: StoredFilterRules | null): Predicate | null {
  if (!rules || rules.enabled === false || rules.groups.length === 0) return null;
  const groups = rules.groups.map((group) => {
    const predicates = group.rules.map(compileRule);
    return group.logic === 'or'
      ? (event: BroadcastEvent) => predicates.some((predicate) => predicate(event))
      : (event: BroadcastEvent) => predicates.every((predicate) => predicate(event));
  });
  return (event) => groups.some((group) => group(event));
}

const parseList = (text: string | null): string[] | null =>
  text === null ? null : (JSON.parse(text) as string[]);

/** A stored destination as the request path uses it (rules compiled once per policy load). */
export function toBroadcastTarget(row: ObservabilityDestinationTable): BroadcastTarget {
  return targetOf({
    id: row.id,
    type: row.type,
    keyHashes: parseList(row.api_key_hashes),
    regions: parseList(row.regions) ?? ['global'],
    samplingRate: row.sampling_rate,
    filterRules: row.filter_rules,
    ...viewOf(row),
  });
}

/** The target a destination's plain data describes, its rules compiled. */
export function targetOf(source: TargetSource): BroadcastTarget {
  return {
    id: source.id,
    type: source.type,
    keyHashes: source.keyHashes ? new Set(source.keyHashes) : null,
    regions: new Set(source.regions),
    samplingRate: source.samplingRate,
    matches: compileFilterRules(
      source.filterRules === null ? null : (JSON.parse(source.filterRules) as StoredFilterRules),
    ),
    privacyMode: source.privacyMode,
    cost: source.cost,
    identity: source.identity,
    requestContext: source.requestContext,
    source,
  };
}

/**
 * Deterministic sampling (reference §3.3): the session (or, without one, the generation) hashed with
 * the destination id gives a number in [0, 1); the event is kept when it is below the rate. A whole
 * session is in or out, and two destinations sample independently.
 */
export function sampled(target: BroadcastTarget, event: BroadcastEvent): boolean {
  if (target.samplingRate >= 1) return true;
  const digest = createHash('sha256')
    .update(`${target.id}:${event.session_id ?? event.generation_id}`)
    .digest();
  return digest.readUInt32BE(0) / 0x1_0000_0000 < target.samplingRate;
}

/** Whether an event goes to a destination: key allowlist, region, sampling, then the filter rules. */
export function selects(
  target: BroadcastTarget,
  event: BroadcastEvent,
  keyHash: string,
  region: string,
): boolean {
  if (target.keyHashes && !target.keyHashes.has(keyHash)) return false;
  if (!target.regions.has(region)) return false;
  if (!sampled(target, event)) return false;
  return target.matches === null || target.matches(event);
}

/** What a destination receives of an event: whether bodies are withheld, which optional parts it gets. */
export type DestinationView = Pick<BroadcastTarget, 'privacyMode' | 'cost' | 'identity' | 'requestContext'>;

/** A stored destination's view, as it is now. */
export const viewOf = (row: ObservabilityDestinationTable): DestinationView => ({
  privacyMode: row.privacy_mode === 1,
  cost: row.broadcast_generation_cost === 1,
  identity: row.broadcast_generation_identity === 1,
  requestContext: row.broadcast_generation_request_context === 1,
});

/**
 * The event as this destination receives it: bodies withheld in privacy mode, optional parts by flag.
 * An event with nothing to withhold is returned as it is (the delivery of a stored event, already
 * narrowed when it was built, copies nothing).
 */
export function eventForDestination(target: DestinationView, event: BroadcastEvent): BroadcastEvent {
  const withholds =
    (target.privacyMode && (event.input !== null || event.output !== null)) ||
    (!target.cost && event.cost !== null) ||
    (!target.identity && event.identity !== null) ||
    (!target.requestContext && event.request_context !== null);
  if (!withholds) return event;
  return {
    ...event,
    input: target.privacyMode ? null : event.input,
    output: target.privacyMode ? null : event.output,
    cost: target.cost ? event.cost : null,
    identity: target.identity ? event.identity : null,
    request_context: target.requestContext ? event.request_context : null,
  };
}

/** `tool-calls` and `content-filter` inside a rule's text, in the API's spelling. */
const apiFinishReasonSpelling = (text: string): string =>
  text.replaceAll('tool-calls', 'tool_calls').replaceAll('content-filter', 'content_filter');

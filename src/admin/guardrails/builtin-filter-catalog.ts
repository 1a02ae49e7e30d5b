/**
 * The builtin content filters of spec 2.5 rule 2 and reference §4.2: which actions each slug accepts,
 * the label that replaces a redacted match, and the human name a block message uses. Shared by the
 * guardrail API (validation, labels in records) and the content-filter engine.
 */
export const BUILTIN_FILTER_SLUGS = [
  'regex-prompt-injection',
  'email',
  'phone',
  'ssn',
  'credit-card',
  'ip-address',
  'person-name',
  'address',
] as const;

export type BuiltinFilterSlug = (typeof BUILTIN_FILTER_SLUGS)[number];
export type FilterAction = 'block' | 'redact' | 'flag';

export interface BuiltinFilterFacts {
  /** Actions the slug accepts: `flag` only for prompt injection, the personal-data slugs block or redact. */
  actions: readonly FilterAction[];
  /** System-assigned; replaces a redacted match. */
  label: string;
  /** Used in block messages, e.g. "Request blocked by content filter: Email address". */
  humanName: string;
}

export const BUILTIN_FILTERS: Readonly<Record<BuiltinFilterSlug, BuiltinFilterFacts>> = {
  'regex-prompt-injection': {
    actions: ['block', 'redact', 'flag'],
    label: '[PROMPT_INJECTION]',
    humanName: 'Prompt injection',
  },
  email: { actions: ['block', 'redact'], label: '[EMAIL]', humanName: 'Email address' },
  phone: { actions: ['block', 'redact'], label: '[PHONE]', humanName: 'Phone number' },
  ssn: { actions: ['block', 'redact'], label: '[SSN]', humanName: 'Social Security number' },
  'credit-card': { actions: ['block', 'redact'], label: '[CREDIT_CARD]', humanName: 'Credit card number' },
  'ip-address': { actions: ['block', 'redact'], label: '[IP_ADDRESS]', humanName: 'IP address' },
  'person-name': { actions: ['block', 'redact'], label: '[PERSON_NAME]', humanName: 'Person name' },
  address: { actions: ['block', 'redact'], label: '[ADDRESS]', humanName: 'Address' },
};

/** A stored builtin filter (guardrails.content_filter_builtins). */
export interface BuiltinFilter {
  slug: BuiltinFilterSlug;
  action: FilterAction;
  /** Always the catalogue label; accepted and ignored on input. */
  label: string;
  /** Only meaningful for `regex-prompt-injection`; default `all_messages`. */
  scan_scope?: 'user_only' | 'all_messages';
}

/** A stored custom filter (guardrails.content_filters): a JS regular expression checked at save time. */
export interface CustomFilter {
  pattern: string;
  action: FilterAction;
  label?: string | null;
}

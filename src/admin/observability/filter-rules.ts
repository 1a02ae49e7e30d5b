import { type Static, Type } from 'typebox';
import { invalidRequest } from '../../errors/app-error.js';
import { NO_NUL_PATTERN, stringEnum } from '../../platform/schema-types.js';
import type { PatternChecker } from '../guardrails/regex-safety.js';

/** Event fields a rule can test whose value is text (absent = null in the event). */
export const TEXT_FILTER_FIELDS = [
  'model',
  'provider',
  'session_id',
  'user_id',
  'api_key_name',
  'finish_reason',
  'input',
  'output',
] as const;
/** Event fields a rule can test whose value is a number. */
export const NUMERIC_FILTER_FIELDS = [
  'total_cost',
  'total_tokens',
  'prompt_tokens',
  'completion_tokens',
] as const;
export const FILTER_FIELDS = [...TEXT_FILTER_FIELDS, ...NUMERIC_FILTER_FIELDS] as const;

/** Operators comparing text with a string value. */
export const TEXT_OPERATORS = ['contains', 'not_contains', 'starts_with', 'ends_with', 'regex'] as const;
/** Operators comparing a number with a number value. */
export const NUMERIC_OPERATORS = ['gt', 'lt', 'gte', 'lte'] as const;
/** Operators on either kind of field: the value's type follows the field's. */
export const EQUALITY_OPERATORS = ['equals', 'not_equals'] as const;
/** Operators about presence, which take no value. */
export const PRESENCE_OPERATORS = ['exists', 'not_exists'] as const;
export const FILTER_OPERATORS = [
  ...EQUALITY_OPERATORS,
  ...TEXT_OPERATORS,
  ...NUMERIC_OPERATORS,
  ...PRESENCE_OPERATORS,
] as const;

export type FilterField = (typeof FILTER_FIELDS)[number];
export type FilterOperator = (typeof FILTER_OPERATORS)[number];

export const MAX_FILTER_GROUPS = 10;
export const MAX_RULES_PER_GROUP = 20;
export const MAX_RULE_VALUE_LENGTH = 1000;

/**
 * One rule's value: text or a number in one schema (not an `anyOf`), so Ajv's only reported error
 * names the real problem. `maxLength` and `pattern` apply to strings only.
 */
const RuleValue = Type.Unsafe<string | number>({
  type: ['string', 'number'],
  maxLength: MAX_RULE_VALUE_LENGTH,
  pattern: NO_NUL_PATTERN,
});

const RuleSchema = Type.Object(
  {
    field: stringEnum(FILTER_FIELDS),
    operator: stringEnum(FILTER_OPERATORS),
    value: Type.Optional(RuleValue),
  },
  { additionalProperties: false },
);

const RuleGroupSchema = Type.Object(
  {
    logic: Type.Optional(stringEnum(['and', 'or'])),
    rules: Type.Array(RuleSchema, { minItems: 1, maxItems: MAX_RULES_PER_GROUP }),
  },
  { additionalProperties: false },
);

/**
 * `filter_rules` as a client sends it (reference §3.2). A group needs at least one rule, and the
 * list at least one group: an empty list would select nothing, which `enabled: false` or `null`
 * says plainly.
 */
export const FilterRulesSchema = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean({ description: 'false keeps the rules but forwards every event' })),
    groups: Type.Array(RuleGroupSchema, {
      minItems: 1,
      maxItems: MAX_FILTER_GROUPS,
      description: 'An event is forwarded when it matches at least one group',
    }),
  },
  { additionalProperties: false },
);

export type FilterRulesInput = Static<typeof FilterRulesSchema>;

/** The stored and returned form: every default applied. */
export const StoredFilterRulesSchema = Type.Object({
  enabled: Type.Boolean(),
  groups: Type.Array(
    Type.Object({
      logic: stringEnum(['and', 'or']),
      rules: Type.Array(
        Type.Object({
          field: stringEnum(FILTER_FIELDS),
          operator: stringEnum(FILTER_OPERATORS),
          value: Type.Optional(Type.Unsafe<string | number>({ type: ['string', 'number'] })),
        }),
      ),
    }),
  ),
});

export interface FilterRule {
  field: FilterField;
  operator: FilterOperator;
  /** Absent for `exists`/`not_exists`; a number for numeric fields; a string otherwise. */
  value?: string | number;
}

/**
 * Filter rules as stored in `observability_destinations.filter_rules` (JSON text) and returned by the
 * API. `regex` values passed the custom content-filter check (regex-safety.ts), which compiles them
 * with `gu`: they compile with the `u` flag, and are free of catastrophic backtracking (`g` changes
 * neither).
 */
export interface FilterRules {
  enabled: boolean;
  groups: Array<{ logic: 'and' | 'or'; rules: FilterRule[] }>;
}

const isNumericField = (field: FilterField) => (NUMERIC_FILTER_FIELDS as readonly string[]).includes(field);
const isOneOf = (values: readonly string[], operator: FilterOperator) => values.includes(operator);

/** What one rule's value must be, or null when it is right. */
function valueProblem(rule: FilterRule): string | null {
  const numeric = isNumericField(rule.field);
  const { operator, value } = rule;
  if (isOneOf(PRESENCE_OPERATORS, operator)) {
    return value === undefined ? null : `must be omitted: ${operator} takes no value`;
  }
  if (value === undefined) return `is required by operator ${operator}`;
  if (isOneOf(NUMERIC_OPERATORS, operator)) {
    if (!numeric) return `cannot be compared with ${operator}: ${rule.field} is not a numeric field`;
    return typeof value === 'number' && Number.isFinite(value) ? null : 'must be a finite number';
  }
  if (isOneOf(TEXT_OPERATORS, operator)) {
    if (numeric) return `cannot be matched with ${operator}: ${rule.field} is a numeric field`;
    return typeof value === 'string' ? null : 'must be a string';
  }
  // equals / not_equals: the value's type follows the field's.
  if (numeric) return typeof value === 'number' && Number.isFinite(value) ? null : 'must be a finite number';
  return typeof value === 'string' ? null : 'must be a string';
}

/**
 * Checks the rules beyond their schema (value types per operator and field, regex safety) and
 * returns them with defaults applied. `path` is where the rules sit in the request, e.g.
 * `body.filter_rules`.
 */
export async function normalizeFilterRules(
  input: FilterRulesInput,
  patterns: PatternChecker,
  path: string,
): Promise<FilterRules> {
  const rules: FilterRules = {
    enabled: input.enabled ?? true,
    groups: input.groups.map((group) => ({
      logic: group.logic ?? 'and',
      rules: group.rules.map((rule) => ({ ...rule })),
    })),
  };
  const regexes: Array<{ where: string; pattern: string }> = [];
  for (const [groupIndex, group] of rules.groups.entries()) {
    for (const [ruleIndex, rule] of group.rules.entries()) {
      const where = `${path}.groups.${groupIndex}.rules.${ruleIndex}.value`;
      const problem = valueProblem(rule);
      if (problem) throw invalidRequest(`Invalid request parameters: ${where} ${problem}`);
      if (rule.operator === 'regex') regexes.push({ where, pattern: String(rule.value) });
    }
  }
  const refusal = await patterns.firstRefusal(regexes.map((regex) => regex.pattern));
  if (refusal) {
    throw invalidRequest(
      `Invalid request parameters: ${regexes[refusal.index]?.where} is refused (invalid_regex_pattern): ${refusal.reason}`,
    );
  }
  return rules;
}

/** The stored column back to rules; null when the destination has none. */
export function readFilterRules(text: string | null): FilterRules | null {
  return text === null ? null : (JSON.parse(text) as FilterRules);
}

import type { Detection, Detector } from '../content-filter-types.js';

/**
 * Phrases of the common prompt-injection families, each with the name a block reports in
 * `metadata.patterns`. Every pattern is a sequence of literal alternatives joined by `\s+` with
 * bounded optional words (no nested unbounded quantifiers, no lookaround), so matching is linear
 * in the text; the test suite checks each with recheck. Case-insensitive.
 * A match right after a negation ("do not ignore previous instructions", "never reveal your
 * system prompt") is an instruction against the attack, not the attack, and is not reported.
 */
const FILLER = '(?:(?:all|any|of|the|your|my|these|those|every|everything)\\s+){0,3}';

const REVEAL =
  '\\b(?:(?:reveal|show|print|display|output|repeat|leak|expose|dump|recite)\\s+(?:(?:me|us)\\s+)?|(?:tell|give|send)\\s+(?:me|us)\\s+)';
const QUALIFIERS = '(?:(?:full|entire|complete|initial|original|hidden|secret|exact|verbatim)\\s+)';

export const PROMPT_INJECTION_PATTERNS: ReadonlyArray<{ name: string; pattern: RegExp }> = [
  {
    name: 'ignore-previous-instructions',
    pattern: new RegExp(
      `\\b(?:ignore|disregard|forget|skip|override|bypass|discard)\\s+${FILLER}(?:previous|prior|above|earlier|preceding|foregoing|initial|original|existing)\\s+(?:instructions?|prompts?|rules|directions|directives|guidelines|commands?|context)\\b`,
      'gi',
    ),
  },
  {
    name: 'disregard-system-prompt',
    pattern: new RegExp(
      `\\b(?:ignore|disregard|forget|override|bypass|discard)\\s+${FILLER}(?:system|developer)\\s+(?:prompt|message|instructions?)\\b`,
      'gi',
    ),
  },
  {
    name: 'reveal-system-prompt',
    // "the system message" alone is ordinary talk about chat APIs: the "the" form needs a qualifier
    pattern: new RegExp(
      `${REVEAL}your\\s+${QUALIFIERS}{0,2}(?:system\\s+(?:prompt|message|instructions)|prompt|instructions)\\b|${REVEAL}the\\s+${QUALIFIERS}{1,2}(?:system\\s+(?:prompt|message|instructions)|prompt|instructions)\\b|\\bwhat\\s+(?:is|are|was|were)\\s+your\\s+(?:system\\s+prompt|(?:initial|original|hidden|secret)\\s+(?:instructions|prompt))\\b`,
      'gi',
    ),
  },
  {
    name: 'jailbreak-persona',
    // "act as Dan" can be a colleague; "you are now DAN" and "Do Anything Now" cannot
    pattern:
      /\byou\s+are\s+now\s+(?:an?\s+)?(?:DAN|STAN|DUDE)\b|\b(?:you\s+are\s+(?:now\s+)?|act\s+as\s+|pretend\s+(?:to\s+be|you\s+are)\s+|role-?play\s+as\s+|become\s+)(?:an?\s+)?(?:jailbroken|unfiltered|uncensored|unrestricted|amoral)\b|\bdo\s+anything\s+now\b/gi,
  },
  {
    name: 'developer-mode',
    // "enable developer mode" is how phones are set up: developer mode counts only when aimed at the model
    pattern:
      /\b(?:(?:you\s+are|you're)\s+(?:now\s+)?(?:in|running\s+in)|simulate|act\s+in|respond\s+in|(?:ChatGPT|AI|assistant|model|you)\s+with)\s+(?:the\s+)?(?:developer|god|jailbreak|unrestricted|DAN)\s+mode\b|\b(?:enable|enter|activate|switch\s+to)\s+(?:the\s+)?(?:god|jailbreak|unrestricted|DAN)\s+mode\b|\b(?:jailbreak|DAN|god)\s+mode\s+(?:is\s+)?(?:now\s+)?(?:enabled|activated|on)\b/gi,
  },
  {
    name: 'restriction-override',
    pattern:
      /\byou(?:\s+are|'re)\s+(?:now\s+)?(?:no\s+longer|not)\s+(?:bound|restricted|limited|constrained)\s+by\s+(?:(?:any|your|the|its|openai's|anthropic's)\s+){0,2}(?:rules|guidelines|policies|restrictions|filters|content\s+polic(?:y|ies)|safety\s+guidelines)\b|\byou\s+(?:have|has)\s+no\s+(?:restrictions|rules|limitations|filters|guidelines|content\s+policy)\b/gi,
  },
  {
    name: 'instruction-override',
    pattern:
      /\b(?:new|updated|real)\s+system\s+(?:prompt|instructions|message)\s*:|\byour\s+(?:new|real|true)\s+(?:instructions|role|task|purpose|objective)\s+(?:is|are)\b/gi,
  },
  {
    name: 'chat-template-markers',
    pattern:
      /<\|(?:im_start|im_end|system|endoftext|start_header_id|end_header_id|eot_id)\|>|\[\/?INST\]|<<\/?SYS>>/gi,
  },
  {
    name: 'encoded-payload',
    pattern:
      /\b(?:decode|decipher)\s+(?:(?:this|the\s+following|it|that)\s+)?(?:from\s+)?(?:base64|base-64|b64|rot13|rot-13|hex)\s+(?:and|then)\s+(?:(?:then|also)\s+)?(?:follow|execute|obey|run|perform|do)\b|\b(?:follow|execute|obey|run|carry\s+out)\s+(?:the\s+)?(?:decoded|base64|base-64|b64|rot13)\s+(?:instructions|text|message|payload|commands?)\b/gi,
  },
];

/** Negations a few words before a match: "do not", "never", "must not", "don't"… */
const NEGATED = /\b(?:not|never|don't|dont|do\s+not|cannot|can't|won't|shouldn't|mustn't)\s+(?:\w+\s+)?$/i;

/**
 * All families in one alternation, one named group each: one pass over the text instead of one per
 * family (most prompt texts are short, where the per-call cost dominates). At one position the
 * first family that matches is reported.
 */
const ANY_INJECTION = new RegExp(
  PROMPT_INJECTION_PATTERNS.map(({ pattern }, index) => `(?<family${index}>${pattern.source})`).join('|'),
  'gi',
);

function familyOf(match: RegExpExecArray): string {
  const groups = match.groups ?? {};
  const index = PROMPT_INJECTION_PATTERNS.findIndex((_, family) => groups[`family${family}`] !== undefined);
  return PROMPT_INJECTION_PATTERNS[index]!.name;
}

export const detectPromptInjection: Detector = ({ text }) => {
  const detections: Detection[] = [];
  ANY_INJECTION.lastIndex = 0;
  for (let match = ANY_INJECTION.exec(text); match !== null; match = ANY_INJECTION.exec(text)) {
    if (NEGATED.test(text.slice(Math.max(0, match.index - 40), match.index))) continue;
    detections.push({ start: match.index, end: match.index + match[0].length, name: familyOf(match) });
  }
  return detections;
};

// Micro-benchmark of the content-filter engine: how long applyContentFilters holds the event loop
// for one request with every builtin filter on, at three prompt sizes; then the same scans in a
// content-filter thread, with what they still cost the request thread.
// Usage: npm run bench:content-filters [-- --seconds 2]

import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { BuiltinFilter, BuiltinFilterSlug } from '../src/admin/guardrails/builtin-filter-catalog.js';
import { createContentFilterThreads } from '../src/gateway/pipeline/content-filters/content-filter-threads.js';
import {
  applyContentFilters,
  type CompiledContentFilters,
  compileContentFilters,
  DEFAULT_LANGUAGE_CHARACTER_BUDGET,
} from '../src/gateway/pipeline/content-filters/content-filters.js';
import { applyPromptEdits } from '../src/gateway/pipeline/content-filters/prompt-segments.js';
import type { GenerationRequest } from '../src/spec/generation-request.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '2' } } });
const secondsPerCase = Number(values.seconds);

// Prose with the kinds of personal data the filters look for, about one in four sentences.
const SENTENCES = [
  'Please review the attached quarterly report before the meeting on Thursday.',
  'The numbers for the third quarter look odd to me, so I would like a second opinion.',
  'You can reach John Smith at john.smith@example.com if anything is unclear.',
  'We shipped version 2.4.1 of the client in 2024 and the price stayed at $1,299.00.',
  'Her direct line is +1 (415) 555-2671 and the office is at 42 Baker Street, London.',
  'The deployment runs on 10.0.12.7 behind the load balancer, order 1234567890 is unrelated.',
  'Summarise the main risks in three bullet points and suggest a next step for each.',
  'Mary said the invoice for card 4111 1111 1111 1111 was paid twice by mistake.',
  'The staging cluster also answers on 2001:db8::17 for the IPv6 tests.',
  'Keep the tone friendly, avoid jargon, and write for a reader who is new to the project.',
];

function prose(characters: number): string {
  let text = '';
  for (let index = 0; text.length < characters; index += 1) text += `${SENTENCES[index % SENTENCES.length]} `;
  return text.slice(0, characters);
}

const ALL: BuiltinFilterSlug[] = [
  'email',
  'phone',
  'ssn',
  'credit-card',
  'ip-address',
  'person-name',
  'address',
  'regex-prompt-injection',
];
const builtins = (slugs: BuiltinFilterSlug[]): BuiltinFilter[] =>
  slugs.map((slug) => ({
    slug,
    action: slug === 'regex-prompt-injection' ? 'flag' : 'redact',
    label: '',
  }));

function measure(filters: CompiledContentFilters, request: GenerationRequest) {
  for (let warm = 0; warm < 3; warm += 1) applyContentFilters(filters, request);
  const samples: number[] = [];
  const deadline = performance.now() + secondsPerCase * 1000;
  while (performance.now() < deadline || samples.length < 5) {
    const start = performance.now();
    applyContentFilters(filters, request);
    samples.push((performance.now() - start) * 1000);
  }
  samples.sort((a, b) => a - b);
  const mean = samples.reduce((sum, value) => sum + value, 0) / samples.length;
  return {
    mean,
    p50: samples[Math.floor(samples.length / 2)]!,
    p99: samples[Math.floor(samples.length * 0.99)]!,
  };
}

const format = (microseconds: number) => `${Math.round(microseconds).toLocaleString('en-US')} µs`;

const configurations: Array<[string, CompiledContentFilters]> = [
  ['all builtins', compileContentFilters({ builtins: builtins(ALL), custom: [] })],
  [
    'regex builtins only',
    compileContentFilters({
      builtins: builtins(ALL.filter((slug) => slug !== 'person-name' && slug !== 'address')),
      custom: [],
    }),
  ],
];

/** A tool result as JSON: every string literal is scanned on its own (json-text-pieces.ts). */
function jsonToolOutput(characters: number): string {
  const rows: unknown[] = [];
  for (let index = 0; JSON.stringify(rows).length < characters; index += 1) {
    rows.push({ id: index, note: SENTENCES[index % SENTENCES.length], score: index * 0.5 });
  }
  return JSON.stringify(rows);
}

const userText = (text: string): GenerationRequest => ({
  model: 'bench',
  input: [{ type: 'message', role: 'user', content: [{ type: 'text', text }] }],
});
const prompts: Array<[string, GenerationRequest]> = [2_000, 20_000, 200_000].map((size) => [
  `${size / 1000} KB prose`,
  userText(prose(size)),
]);
prompts.push([
  '200 KB JSON tool output',
  { model: 'bench', input: [{ type: 'function-call-output', callId: 'c', output: jsonToolOutput(200_000) }] },
]);

console.log(
  `Node ${process.version}, load average ${loadavg()[0]!.toFixed(1)}, ` +
    `NLP budget ${DEFAULT_LANGUAGE_CHARACTER_BUDGET} characters per request`,
);
console.log('| prompt | filters | mean | p50 | p99 | NLP skipped |');
console.log('|---|---|---|---|---|---|');
for (const [prompt, request] of prompts) {
  for (const [name, filters] of configurations) {
    const { mean, p50, p99 } = measure(filters, request);
    const skipped = applyContentFilters(filters, request).skipped.length > 0 ? 'yes' : 'no';
    console.log(`| ${prompt} | ${name} | ${format(mean)} | ${format(p50)} | ${format(p99)} | ${skipped} |`);
  }
}

// The same scans in a content-filter thread, as the gateway runs them (content_filter_threads): the
// scan's time as the request waits for it, and the request thread's share of it, read from the
// event loop's utilization (posting the prompt, taking the answer, rebuilding the request).
const threads = createContentFilterThreads({ size: 1 });
const allBuiltins = { builtins: builtins(ALL), custom: [] };
console.log(
  "\nIn a content-filter thread, all builtins (the request thread's part: its event loop busy per scan)",
);
console.log('| prompt | scan p50 | request thread per scan |');
console.log('|---|---|---|');
for (const [prompt, request] of prompts) {
  for (let warm = 0; warm < 3; warm += 1) await threads.scan(allBuiltins, request);
  const samples: number[] = [];
  const before = performance.eventLoopUtilization();
  const deadline = performance.now() + secondsPerCase * 1000;
  while (performance.now() < deadline || samples.length < 5) {
    const start = performance.now();
    applyPromptEdits(request, (await threads.scan(allBuiltins, request)).edits);
    samples.push((performance.now() - start) * 1000);
  }
  const busy = performance.eventLoopUtilization(before);
  samples.sort((a, b) => a - b);
  const held = (busy.active * 1000) / samples.length;
  console.log(`| ${prompt} | ${format(samples[Math.floor(samples.length / 2)]!)} | ${format(held)} |`);
}
await threads.close();

// What one NLP slice costs: the figure behind the default budget.
const nlpOnly = compileContentFilters(
  { builtins: builtins(['person-name', 'address']), custom: [] },
  { languageCharacterBudget: 2_000 },
);
const slice = measure(nlpOnly, userText(prose(2_000)));
console.log(`\nperson-name + address on one 2,000-character slice: p50 ${format(slice.p50)}`);

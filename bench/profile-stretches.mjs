// Where a gateway's slow moments come from: reads a main-thread CPU profile (bench/cpu-profile.mjs
// writes /tmp/cpu-profile-<pid>.cpuprofile) and prints every stretch of busy samples (no idle sample
// between them) at least `min-ms` long, with its time split by what the stack was doing: garbage
// collection, the broadcast worker (claims, hand-off, posting to the delivery thread), the
// generation log's group commit, other work of our modules (requests), or a Node function. A
// request that arrives during a stretch waits for its end, so at a steady rate the long stretches
// are the slowest requests (docs/observability.md, "Speed").
//
// Usage: node bench/profile-stretches.mjs /tmp/cpu-profile-<pid>.cpuprofile [min-ms, default 3]
import { readFileSync } from 'node:fs';

const [file, minArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench/profile-stretches.mjs <profile.cpuprofile> [min-ms]');
  process.exit(2);
}
const minMs = Number(minArg ?? 3);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const parents = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);

/** What a sample's stack was doing (the first rule that matches, from the leaf up). */
const kinds = new Map();
function kindOf(id) {
  const known = kinds.get(id);
  if (known) return known;
  const frames = [];
  for (let at = id; at !== undefined; at = parents.get(at)) frames.push(nodes.get(at).callFrame);
  const leaf = frames[0].functionName;
  const urls = frames.map((frame) => frame.url ?? '');
  let kind;
  if (leaf === '(idle)') kind = 'idle';
  else if (leaf === '(garbage collector)') kind = 'gc';
  else if (urls.some((url) => /broadcast-worker|outbox-fanout|delivery-thread\.js/.test(url)))
    kind = 'broadcast worker';
  else if (urls.some((url) => /generation-log|sqlite-generation-writer/.test(url))) kind = 'group commit';
  else if (urls.some((url) => url.includes('/dist/'))) kind = 'requests';
  else kind = `node: ${leaf || '(anonymous)'}`;
  kinds.set(id, kind);
  return kind;
}

const stretches = [];
let current = null;
let time = profile.startTime;
const all = new Map();
for (let index = 0; index < profile.samples.length; index += 1) {
  // A sample's delta is the time since the one before (the first's, since the profile started).
  const delta = index === 0 ? 0 : (profile.timeDeltas[index] ?? 0);
  time += index === 0 ? (profile.timeDeltas[0] ?? 0) : delta;
  const kind = kindOf(profile.samples[index]);
  all.set(kind, (all.get(kind) ?? 0) + delta);
  if (kind === 'idle') {
    if (current) {
      current.end = time;
      stretches.push(current);
      current = null;
    }
    continue;
  }
  if (!current) current = { start: time, kinds: new Map() };
  current.kinds.set(kind, (current.kinds.get(kind) ?? 0) + delta);
}

const ms = (micros) => (micros / 1000).toFixed(1);
const long = stretches.filter((stretch) => (stretch.end - stretch.start) / 1000 >= minMs);
const totals = new Map();
for (const stretch of long) {
  const parts = [...stretch.kinds].sort((a, b) => b[1] - a[1]);
  for (const [kind, micros] of parts) totals.set(kind, (totals.get(kind) ?? 0) + micros);
  const shown = parts.filter(([, micros]) => micros >= 300).map(([kind, micros]) => `${kind} ${ms(micros)}`);
  console.log(
    `${((stretch.start - profile.startTime) / 1e6).toFixed(2)} s: ${ms(stretch.end - stretch.start)} ms busy (${shown.join(', ')})`,
  );
}
const span = (time - profile.startTime) / 1e6;
console.log(
  `\n${long.length} stretches of ${minMs} ms or more in ${span.toFixed(1)} s profiled; their time by kind (ms):`,
);
for (const [kind, micros] of [...totals].sort((a, b) => b[1] - a[1]).slice(0, 8))
  console.log(`  ${kind}: ${ms(micros)}`);
console.log('the whole profile by kind (ms):');
for (const [kind, micros] of [...all].sort((a, b) => b[1] - a[1]).slice(0, 8))
  console.log(`  ${kind}: ${ms(micros)}`);

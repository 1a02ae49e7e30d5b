/**
 * A content-filter thread (see content-filter-threads.ts): scans the prompts the request thread
 * posts and answers with the findings and the changed texts. It compiles each filter set once and
 * keeps the most recently used ones.
 */
import { parentPort } from 'node:worker_threads';
import { scanContentFilters } from './apply-content-filters.js';
import { compileContentFilters } from './compile-content-filters.js';
import type { FilterJob, FilterReply } from './content-filter-threads.js';
import type { CompiledContentFilters } from './content-filter-types.js';

const port = parentPort;
if (!port) throw new Error('content-filter-thread-entry runs as a worker thread');

/** Compiled sets kept, by the parent's number for them, least recently used first. */
const MAX_COMPILED_SETS = 64;
const compiled = new Map<number, CompiledContentFilters>();

function compiledSet(job: FilterJob): CompiledContentFilters {
  let filters = compiled.get(job.set);
  if (filters) compiled.delete(job.set);
  else filters = compileContentFilters(job.filters);
  compiled.set(job.set, filters);
  if (compiled.size > MAX_COMPILED_SETS) compiled.delete(compiled.keys().next().value as number);
  return filters;
}

port.on('message', (job: FilterJob) => {
  let reply: FilterReply;
  try {
    reply = { id: job.id, ok: true, scan: scanContentFilters(compiledSet(job), job.request) };
  } catch (error) {
    reply = { id: job.id, ok: false, message: (error as Error).message };
  }
  port.postMessage(reply);
});

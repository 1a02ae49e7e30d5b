import { Worker } from 'node:worker_threads';

/**
 * Starts a worker thread running the module `entry` (a file name without its extension) next to
 * the module whose `import.meta.url` is `from`: the compiled .js when the gateway runs from dist/,
 * or — when it runs from its TypeScript sources (tests, `tsx`) — the .ts one, loaded through tsx's
 * loader, which a worker thread does not inherit from its parent.
 */
export function startModuleThread(from: string, entry: string, workerData: unknown): Worker {
  if (!from.endsWith('.ts')) return new Worker(new URL(`./${entry}.js`, from), { workerData });
  const source = new URL(`./${entry}.ts`, from).href;
  const tsx = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(tsx)}).then((api) => { api.register(); return import(${JSON.stringify(source)}); })`;
  return new Worker(bootstrap, { eval: true, workerData });
}

/**
 * A module a thread started from source text imports itself (see sqlite-thread.ts): its URL, and
 * tsx's registration module when the gateway runs from its TypeScript sources (null from dist/).
 */
export interface ThreadModule {
  url: string;
  tsx: string | null;
}

/** The module at `path` (relative, without its extension) next to the module whose URL is `from`. */
export function threadModule(from: string, path: string): ThreadModule {
  if (!from.endsWith('.ts')) return { url: new URL(`${path}.js`, from).href, tsx: null };
  return { url: new URL(`${path}.ts`, from).href, tsx: import.meta.resolve('tsx/esm/api') };
}

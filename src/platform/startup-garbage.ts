/** What a collection did to the heap V8 holds (`heapTotal`) and to the process's resident memory. */
export interface StartupCollection {
  heapTotalBefore: number;
  heapTotalAfter: number;
  rssBefore: number;
  rssAfter: number;
}

/**
 * Collects the garbage of starting up, once, before the gateway serves (`serve` calls it once
 * Fastify is ready, right before it listens). Loading the catalogue, compiling schemas and running
 * migrations leave the old generation about twice the size of what stays alive (84 against 41 MB
 * of heap in `bench/inference-config.yaml`'s gateway) and the young generation grown to 32 MB, and V8
 * keeps those pages until a full collection, which under load comes only when the heap has grown
 * further: the request path's memory then stands on ~45 MB of garbage. A full collection here gives
 * the empty pages back and shrinks the young generation to 1 MB: resident memory at idle 164 → 125
 * MB in the same gateway.
 *
 * It asks V8 through the inspector protocol (`HeapProfiler.collectGarbage`), which needs no node
 * flag. It resolves null instead when the inspector cannot be had: a Node built without it (where
 * merely importing `node:inspector` throws, hence the import here and not at the top), or one whose
 * permission model refuses it.
 */
export async function collectStartupGarbage(): Promise<StartupCollection | null> {
  if (!process.features.inspector) return null;
  let session: import('node:inspector').Session;
  try {
    const { Session } = await import('node:inspector');
    session = new Session();
    session.connect();
  } catch {
    return null;
  }
  const before = process.memoryUsage();
  return new Promise((resolve) => {
    session.post('HeapProfiler.collectGarbage', (error) => {
      // Not from inside the callback: a session disconnected while it dispatches its own answer
      // leaves the thread waiting for ever (Node 20).
      setImmediate(() => session.disconnect());
      if (error) {
        resolve(null);
        return;
      }
      const after = process.memoryUsage();
      resolve({
        heapTotalBefore: before.heapTotal,
        heapTotalAfter: after.heapTotal,
        rssBefore: before.rss,
        rssAfter: after.rss,
      });
    });
  });
}

/**
 * How deep JSON the gateway takes in may nest: request bodies, the function-call arguments inside
 * them, upstream answers. `JSON.parse` builds any depth, but `JSON.stringify` and every recursive
 * walk after it overflow the stack somewhere past a thousand levels (a tool schema 5,000 levels
 * deep — 30 KB of brackets — made the gateway answer 500), so deeper input is refused where it
 * arrives. Tool schemas and arguments nest a few dozen levels at most; 128 leaves them room.
 */
export const MAX_JSON_DEPTH = 128;

const isContainer = (value: unknown): value is object => typeof value === 'object' && value !== null;

/** Depths up to this are checked by recursion first: it allocates nothing and its stack stays small. */
const MAX_RECURSIVE_DEPTH = 1_000;

/**
 * Whether `node` (at `depth`) or anything inside it is an array or object deeper than `maxDepth`.
 * The recursion stops at `maxDepth + 1` levels, so it is safe for any input within the bound. It may
 * visit inherited enumerable keys as well (`for…in`), which only makes it answer true more often:
 * a true is confirmed by `pathTooDeep`'s own walk.
 */
function nestsDeeper(node: object, depth: number, maxDepth: number): boolean {
  if (depth > maxDepth) return true;
  if (Array.isArray(node)) {
    for (let item = 0; item < node.length; item += 1) {
      const child: unknown = node[item];
      if (isContainer(child) && nestsDeeper(child, depth + 1, maxDepth)) return true;
    }
    return false;
  }
  const record = node as Record<string, unknown>;
  for (const key in record) {
    const child = record[key];
    if (isContainer(child) && nestsDeeper(child, depth + 1, maxDepth)) return true;
  }
  return false;
}

/**
 * The keys down to the first array or object of `value` nested more than `maxDepth` levels deep
 * (`value` itself is level 1), or null when none is. Most values are within the bound: a recursion
 * bounded by it answers those without allocating. Past it (or for a bound too large to recurse to),
 * a breadth-first iterative walk, safe on any depth, finds the path. Both visit arrays and objects
 * only: a long conversation of strings costs little.
 */
export function pathTooDeep(value: unknown, maxDepth = MAX_JSON_DEPTH): string[] | null {
  if (!isContainer(value)) return null;
  if (maxDepth <= MAX_RECURSIVE_DEPTH && !nestsDeeper(value, 1, maxDepth)) return null;
  const nodes: object[] = [value];
  const depths: number[] = [1];
  const parents: number[] = [-1];
  const keys: string[] = [''];
  for (let index = 0; index < nodes.length; index += 1) {
    const node = nodes[index] as object;
    const depth = depths[index] as number;
    if (depth > maxDepth) {
      const path: string[] = [];
      for (let at = index; at > 0; at = parents[at] as number) path.push(keys[at] as string);
      return path.reverse();
    }
    if (Array.isArray(node)) {
      for (let item = 0; item < node.length; item += 1) {
        const child: unknown = node[item];
        if (!isContainer(child)) continue;
        nodes.push(child);
        depths.push(depth + 1);
        parents.push(index);
        keys.push(String(item));
      }
      continue;
    }
    const record = node as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      const child = record[key];
      if (!isContainer(child)) continue;
      nodes.push(child);
      depths.push(depth + 1);
      parents.push(index);
      keys.push(key);
    }
  }
  return null;
}

/**
 * `pathTooDeep` for a value parsed from `text`: nesting n levels takes at least 2n characters, so a
 * text shorter than that is not walked at all (most requests and stream events).
 */
export function pathTooDeepIn(text: string, value: unknown, maxDepth = MAX_JSON_DEPTH): string[] | null {
  return text.length < 2 * (maxDepth + 1) ? null : pathTooDeep(value, maxDepth);
}

/** A path as messages name fields (`body.tools.0.function`), its first eight keys then `…`. */
export function describeDeepPath(root: string, path: readonly string[]): string {
  const shown = [root, ...path.slice(0, 8)].join('.');
  return path.length > 8 ? `${shown}…` : shown;
}

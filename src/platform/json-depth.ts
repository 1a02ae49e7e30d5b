/**
 * How deep JSON the gateway takes in may nest: request bodies, the function-call arguments inside
 * them, upstream answers. `JSON.parse` builds any depth, but `JSON.stringify` and every recursive
 * walk after it overflow the stack somewhere past a thousand levels (a tool schema 5,000 levels
 * deep — 30 KB of brackets — made the gateway answer 500), so deeper input is refused where it
 * arrives. Tool schemas and arguments nest a few dozen levels at most; 128 leaves them room.
 */
export const MAX_JSON_DEPTH = 128;

const isContainer = (value: unknown): value is object => typeof value === 'object' && value !== null;

/**
 * The keys down to the first array or object of `value` nested more than `maxDepth` levels deep
 * (`value` itself is level 1), or null when none is. Breadth-first and iterative, so it is safe on
 * any depth, and it visits arrays and objects only: a long conversation of strings costs little.
 */
export function pathTooDeep(value: unknown, maxDepth = MAX_JSON_DEPTH): string[] | null {
  if (!isContainer(value)) return null;
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

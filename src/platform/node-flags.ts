/**
 * The flags node itself was started with: its command line and `NODE_OPTIONS`. A V8 setting the
 * gateway applies at start (heap growth, parallel scavenging) leaves one an operator gave here.
 * Node takes only a few V8 flags in `NODE_OPTIONS` (`--max-semi-space-size` among them; not
 * `--heap-growing-percent`, `--[no-]parallel-scavenge` or pretenuring): the rest come on its command line.
 */
export function givenNodeFlags(): string[] {
  return [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
}

/**
 * Whether `flags` hold one of the V8 flags `names` (written with `-`, without dashes or `no`), in any
 * spelling node accepts: one or two leading dashes, `_` for `-`, a `no` or `no-` prefix, a `=value`.
 */
export function givesV8Flag(flags: readonly string[], ...names: string[]): boolean {
  return flags.some((flag) => {
    const name = /^--?([^=]+)/.exec(flag)?.[1]?.replaceAll('_', '-');
    if (name === undefined) return false;
    return names.includes(name) || names.includes(name.replace(/^no-?/, ''));
  });
}

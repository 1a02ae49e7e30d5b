/**
 * The flags node itself was started with: its command line and `NODE_OPTIONS`. A V8 setting the
 * gateway applies at start (heap growth, parallel scavenging) leaves one an operator gave here.
 */
export function givenNodeFlags(): string[] {
  return [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
}

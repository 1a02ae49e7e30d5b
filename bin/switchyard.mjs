#!/usr/bin/env node
// Runs the compiled CLI, building it first when dist/ is missing or older than the sources (a fresh
// clone after npm install, or a checkout that moved on since the last build).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, utimesSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const entry = join(root, 'dist', 'main.js');
const buildInfo = join(root, 'dist', '.tsbuildinfo');

function newestSource(directory) {
  let newest = 0;
  for (const item of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, item.name);
    newest = Math.max(newest, item.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

const stale =
  !existsSync(entry) ||
  !existsSync(buildInfo) ||
  statSync(buildInfo).mtimeMs < newestSource(join(root, 'src'));
if (stale) {
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const built = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], {
    stdio: 'inherit',
  });
  if (built.status !== 0) process.exit(built.status ?? 1);
  // tsc leaves its build info untouched when nothing changed; mark the build as current.
  if (existsSync(buildInfo)) utimesSync(buildInfo, new Date(), new Date());
}
await import(pathToFileURL(entry).href);

#!/usr/bin/env node
/**
 * `node scripts/launch.mjs dist/<entry>.js [args...]`: what `npm start`, `npm run deployer`, `npm run corectl`
 * (dist/core/cli/) and `npm run login` (dist/plugins/identity/login-cli.js) run. Rebuilds dist/ first when a
 * source changed since the last build (after a `git pull`, say), then runs the compiled entry point in this
 * same process: npm's script shell `exec`s it, so `npm start` leaves npm and one node process, and the check
 * costs a stat of the sources (a few ms) instead of a second node start (about 50 ms of CPU, measured).
 */
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildIfStale } from './build.mjs';

const entry = process.argv[2];
if (!entry) {
  process.stderr.write('usage: node scripts/launch.mjs dist/<entry>.js [args...]\n');
  process.exit(2);
}
buildIfStale();
process.argv.splice(2, 1); // the entry point reads its own arguments from argv[2] on
await import(pathToFileURL(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', entry)).href);

#!/usr/bin/env -S node --max-semi-space-size=8
// The flag caps V8's semi-spaces at 8 MB (default: 16): a request's garbage dies young, and the
// larger young generation mostly adds resident memory (bench/README.md). Benchmarks read the
// flags from this line, so they run the server as `npm start` does.
// Runs the compiled CLI of this repository (built by `npm install` through the prepare script).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('parley: the build is missing; run `npm install` (or `npm run build`) first\n');
  process.exit(1);
}
await import(entry.href);

#!/usr/bin/env node
// The layout rules that are about text rather than imports (the import rules are in
// .dependency-cruiser.cjs): SQL is written only in repositories, fast-path files and db/; no
// hand-written source file under src/ passes 450 lines. Exits 1 and lists every breach.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MAX_LINES = 450;
const SQL = /\b(selectFrom|insertInto|updateTable|deleteFrom|replaceInto|mergeInto)\(|\bsql(<[^`]*>)?`/;
const SQL_HOMES = [/^src\/db\//, /\.repository\.ts$/, /\.fast\.ts$/, /^src\/jobs\/[a-z-]*-store\.ts$/];

function* files(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else if (entry.name.endsWith('.ts')) yield path;
  }
}

const breaches = [];
for (const path of files(join(ROOT, 'src'))) {
  const file = relative(ROOT, path);
  const lines = readFileSync(path, 'utf8').split('\n');
  if (lines.length > MAX_LINES) breaches.push(`${file}: ${lines.length} lines (at most ${MAX_LINES}; split it by idea)`);
  if (SQL_HOMES.some((home) => home.test(file))) continue;
  lines.forEach((line, i) => {
    if (SQL.test(line)) breaches.push(`${file}:${i + 1}: SQL outside a repository, fast-path file or db/: ${line.trim()}`);
  });
}
for (const breach of breaches) process.stderr.write(`${breach}\n`);
if (breaches.length > 0) {
  process.stderr.write(`\n${breaches.length} layout breaches (see CONVENTIONS.md)\n`);
  process.exit(1);
}

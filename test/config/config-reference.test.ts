import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configurationPage } from '../../src/config-docs.js';
import { SETTINGS } from '../../src/config-reference.js';

const SRC = new URL('../../src/', import.meta.url).pathname;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

describe('the configuration reference', () => {
  it('lists every environment variable the code reads', () => {
    const read = new Set<string>();
    for (const file of sourceFiles(SRC)) {
      for (const m of readFileSync(file, 'utf8').matchAll(/\benv\.([A-Z][A-Z0-9_]+)|env\[['"`]([A-Z][A-Z0-9_]+)/g)) {
        read.add(m[1] ?? m[2] ?? '');
      }
    }
    const listed = new Set(SETTINGS.flatMap((s) => s.names));
    // `env[\`PARLEY_BASE_URL_${region}\`]` reads the per-region form, listed as PARLEY_BASE_URL_<REGION>.
    const missing = [...read]
      .map((name) => (name.endsWith('_') ? `${name}<REGION>` : name))
      .filter((name) => !listed.has(name))
      .sort();
    expect(missing, 'add these to src/config-reference.ts').toEqual([]);
  });

  it('docs/configuration.md is the page generated from it', () => {
    const page = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    expect(page, 'run: node --import tsx scripts/config-docs.ts').toBe(configurationPage());
  });
});

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
  'packages/client/README.md',
  'bench/README.md',
];

describe('the documentation', () => {
  it('links only to files that exist', () => {
    const broken: string[] = [];
    for (const page of PAGES) {
      const text = readFileSync(join(ROOT, page), 'utf8');
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1] ?? '';
        if (/^(https?:|mailto:|#)/.test(target)) continue;
        const file = resolve(dirname(join(ROOT, page)), target.split('#')[0] ?? '');
        if (!existsSync(file)) broken.push(`${page} → ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('has a short README that links every page of docs/', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme.length).toBeLessThan(8_000);
    for (const page of PAGES.filter((p) => p.startsWith('docs/') && p !== 'docs/README.md')) {
      expect(readme, page).toContain(`(${page})`);
    }
  });

  it('shows the example bot in the README exactly as the file the conversation test runs', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const bot = readFileSync(join(ROOT, 'examples/echo-bot.mjs'), 'utf8');
    expect(readme).toContain(`\`\`\`js\n${bot}\`\`\``);
    expect(readme).toContain('PARLEY_WEBHOOK_ALLOW_PRIVATE=true');
  });
});

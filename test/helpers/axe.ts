import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

/** axe-core's source, read once per process. */
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface Violation {
  readonly id: string;
  readonly impact?: string | null;
  readonly help: string;
  readonly nodes: readonly { readonly target: readonly unknown[] }[];
}

/**
 * The serious and critical accessibility violations of the page as it is now, one line each
 * (`rule: help (elements)`), by axe-core run in the page. axe is put in the page through the
 * browser's protocol, as a script the page's own policy cannot refuse, and asked for violations
 * only: a few hundred milliseconds a page, where a builder that runs each frame apart on a page of
 * its own took a second and more. The dashboard has no frames.
 */
export async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  const violations = (await page.evaluate(() =>
    (
      globalThis as unknown as {
        axe: { run(context: unknown, options: unknown): Promise<{ violations: unknown[] }> };
        document: unknown;
      }
    ).axe
      .run((globalThis as unknown as { document: unknown }).document, { resultTypes: ['violations'] })
      .then((r) => r.violations),
  )) as Violation[];
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

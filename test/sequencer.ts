import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest, whose tests wait on real time (a paced campaign, a browser, several
 * processes): begun first, so that the run does not end with one fork working through one of them
 * while the others are done. Reorder or add as figures change (docs/development.md).
 */
export const LONG_FILES = [
  'test/dashboard/browser.test.ts',
  'test/dashboard/browser-pages.test.ts',
  'test/campaigns/delivery.test.ts',
  'test/cli/platform-cli.test.ts',
  'test/campaigns/kill.test.ts',
  'test/campaigns/campaigns.test.ts',
  'test/numbers/numbers.test.ts',
  'test/conversations/conversations.test.ts',
  'test/messaging/webhooks.test.ts',
  'test/end-users/http.test.ts',
  'test/events/events.test.ts',
  'test/channels/send.test.ts',
];

/**
 * Longest first. Vitest orders by the durations of the last run on this machine when it has them
 * for every file (its cache in node_modules/.vite); a fresh clone (CI) has none, and Vitest would
 * order by size: the files above go first there, then the rest by size.
 */
export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    const relative = (spec: TestSpecification) => spec.moduleId.slice(root.length + 1);
    const known = files.every((spec) => this.ctx.cache.getFileTestResults(`${spec.project.name}:${relative(spec)}`));
    if (known) return sorted;
    const rank = (spec: TestSpecification) => {
      const i = LONG_FILES.indexOf(relative(spec));
      return i < 0 ? LONG_FILES.length : i;
    };
    // Stable: the rest keep Vitest's order.
    return sorted
      .map((spec, i) => ({ spec, i }))
      .sort((a, b) => rank(a.spec) - rank(b.spec) || a.i - b.i)
      .map((x) => x.spec);
  }
}

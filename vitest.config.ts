import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    poolOptions: {
      forks: {
        // As many files at once as there are cores, and two at least: vitest's default is one fewer
        // than the cores (one, on the two-core machines CI runs on), while much of a test's time is
        // spent waiting on a `parley` child process, PostgreSQL, or a timer, with a core idle.
        maxForks: Math.max(2, availableParallelism()),
      },
    },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});

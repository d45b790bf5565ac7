import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    poolOptions: {
      forks: {
        // Two files at once at least (vitest's default is one fewer than the cores: one on the
        // two-core machines CI runs on), as much of a test's time is spent waiting on a `parley`
        // child process, PostgreSQL or a timer, with a core idle. The PostgreSQL schema missing at
        // migration that two at once once met was Kysely's introspection reading every schema of
        // the database, another file's among them as it was dropped (src/db/schema-introspector.ts).
        maxForks: Math.max(2, availableParallelism()),
      },
    },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});

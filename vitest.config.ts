import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { LongestFirst } from './test/sequencer.js';

/** Files at once: one more than cores, two at least (TEST_FORKS to choose). */
const FORKS = Number(process.env.TEST_FORKS) || Math.max(2, availableParallelism() + 1);

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/setup-fork.ts'],
    pool: 'forks',
    // A fork runs file after file in one process (no fresh process and module graph per file, a
    // second of CPU each): a file closes what it opens (apps, servers, timers) and leaves no global
    // state changed. `--isolate` brings the fresh process back for a run that suspects a leak.
    isolate: false,
    poolOptions: {
      forks: {
        // One more file at once than cores, two at least: much of a test's time is spent waiting on
        // a `parley` process, a paced campaign, a browser or PostgreSQL, with a core idle. The
        // PostgreSQL schema missing at migration that two at once once met was Kysely's
        // introspection reading every schema of the database, another file's among them as it was
        // dropped (src/db/schema-introspector.ts).
        maxForks: FORKS,
        // As many kept as started: a fork beyond the minimum is ended once idle, and ending a fork
        // that has run files with isolation off fails the run ("Terminating worker thread").
        minForks: FORKS,
      },
    },
    sequence: { sequencer: LongestFirst },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});

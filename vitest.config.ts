import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // One file at a time on a two-core machine (vitest's default: one fewer than the cores). Two at
    // once measured 798 s for both dialects against a schema-creation race seen once on PostgreSQL
    // under the doubled load; the suite's speed comes from the per-test changes instead.
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});

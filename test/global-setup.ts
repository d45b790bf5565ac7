import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { buildTemplates } from './helpers/template-build.js';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The newest modification time under `path` (files and folders: a removed file changes its folder's). */
function newest(path: string): number {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return 0;
  let time = stat.mtimeMs;
  if (stat.isDirectory()) for (const entry of readdirSync(path)) time = Math.max(time, newest(join(path, entry)));
  return time;
}

/**
 * Whether the build at `output` was made after every one of `inputs` last changed: `npm ci` (its
 * `prepare` script) has just built both in CI, and a second build of unchanged sources takes half
 * a minute of a two-core machine.
 */
function upToDate(output: string, inputs: readonly string[]): boolean {
  const built = statSync(join(root, output), { throwIfNoEntry: false })?.mtimeMs;
  return built !== undefined && inputs.every((input) => newest(join(root, input)) < built);
}

/**
 * Builds dist/ once before the suite: tests that spawn the `parley` command run the build, as
 * users do, instead of compiling the sources in every child process (several seconds each).
 * Type errors do not stop the suite (tsc still emits; `npm run typecheck` is where they fail):
 * only a build that produced no CLI does. The client package is built too, so it is imported by
 * its name (`@parley/client`) as users import it. Either build is skipped when it is newer than
 * its sources and settings. Then the migrated database templates test apps start from
 * (test/helpers/template-build.ts), handed to the test files as `parleyTemplates`.
 */
export default async function setup(project: TestProject): Promise<() => void> {
  const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));
  const settings = ['tsconfig.json', 'tsconfig.build.json', 'package.json'];
  if (!upToDate('dist/cli/main.js', ['src', ...settings])) {
    const res = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, encoding: 'utf8' });
    if (res.status !== 0 && !existsSync(join(root, 'dist/cli/main.js'))) {
      throw new Error(`the build failed, so the CLI cannot be tested:\n${res.stdout}${res.stderr}`);
    }
  }
  const clientInputs = ['packages/client/src', 'packages/client/tsconfig.json', 'packages/client/package.json'];
  if (!upToDate('packages/client/dist/index.js', clientInputs)) {
    const client = spawnSync(process.execPath, [tsc, '-p', 'packages/client/tsconfig.json'], {
      cwd: root,
      encoding: 'utf8',
    });
    if (client.status !== 0) throw new Error(`the client package did not build:\n${client.stdout}${client.stderr}`);
  }
  // The migrated databases every test app starts from (test/helpers/templates.ts).
  const { templates, dispose } = await buildTemplates(process.env.DATABASE_URL);
  project.provide('parleyTemplates', templates);
  return dispose;
}

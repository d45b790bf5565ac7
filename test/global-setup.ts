import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Builds dist/ once before the suite: tests that spawn the `parley` command run the build, as
 * users do, instead of compiling the sources in every child process (several seconds each).
 * Type errors do not stop the suite (tsc still emits; `npm run typecheck` is where they fail):
 * only a build that produced no CLI does. The client package is built too, so it is imported by
 * its name (`@parley/client`) as users import it.
 */
export default function setup(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));
  const res = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, encoding: 'utf8' });
  if (res.status !== 0 && !existsSync(fileURLToPath(new URL('../dist/cli/main.js', import.meta.url)))) {
    throw new Error(`the build failed, so the CLI cannot be tested:\n${res.stdout}${res.stderr}`);
  }
  const client = spawnSync(process.execPath, [tsc, '-p', 'packages/client/tsconfig.json'], {
    cwd: root,
    encoding: 'utf8',
  });
  if (client.status !== 0) throw new Error(`the client package did not build:\n${client.stdout}${client.stderr}`);
}

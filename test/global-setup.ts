import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Builds dist/ once before the suite: tests that spawn the `parley` command run the build, as
 * users do, instead of compiling the sources in every child process (several seconds each).
 */
export default function setup(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));
  const res = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`the build failed, so the CLI cannot be tested:\n${res.stdout}${res.stderr}`);
}

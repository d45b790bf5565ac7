/** Helpers shared by the benchmarks: building, spawning servers, waiting for them. */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const CLI = 'dist/cli/main.js';

/** Builds dist/ (unless told not to), so the benchmark measures what `npm start` runs. */
export function build(skip: boolean): void {
  if (skip) {
    if (!existsSync(`${ROOT}/${CLI}`)) throw new Error(`${CLI} is missing: run \`npm run build\` first`);
    return;
  }
  const res = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (res.status !== 0) throw new Error('npm run build failed');
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Environment for a child server: inherited, minus any Parley setting the caller did not ask for. */
export function serverEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) {
    if (/^(PARLEY_|PORT$)/.test(name)) delete env[name];
  }
  return { ...env, NODE_ENV: 'production', ...extra };
}

export function startChild(args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (d: Buffer) => {
    output = (output + d.toString()).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  child.on('exit', (code, signal) => {
    if (code !== 0 && code !== null && signal === null) {
      process.stderr.write(`${args.join(' ')} exited with ${code}:\n${output}\n`);
    }
  });
  return child;
}

/** Polls a URL until it answers 200; resolves with the time it took, in ms. */
export async function waitFor200(url: string, started: number, timeoutMs = 30_000, everyMs = 5): Promise<number> {
  for (;;) {
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status === 200) return performance.now() - started;
    } catch {
      // not listening yet
    }
    if (performance.now() - started > timeoutMs) throw new Error(`${url} did not answer 200 in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
};

export const fmt = (n: number, digits = 0): string =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { runInThread } from './cli-thread.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** How tests run the `parley` command: the build, which test/global-setup.ts makes before the suite. */
export const CLI_ENTRY: readonly string[] = ['dist/cli/main.js'];
/**
 * How long a `parley` process may take by default: 30 s, or TEST_CLI_TIMEOUT_MS (for a machine so
 * busy that starting Node takes that long).
 */
const CLI_TIMEOUT_MS = Number(process.env.TEST_CLI_TIMEOUT_MS) || 30_000;

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON (throws with the output when it is not JSON). */
  json<T = unknown>(): T;
}

/** Environment for a child process: this test's database, and nothing of the caller's database settings. */
export function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(base)) {
    if (/^(DATABASE_URL|PARLEY_|PORT$|LOG_LEVEL$)/.test(name)) delete base[name];
  }
  return { ...base, NODE_NO_WARNINGS: '1', ...env };
}

/**
 * At most this many `parley` processes of a test file at once (one per core): a test may start
 * several independent commands together, and each keeps a core busy while it loads. More at once
 * only share the cores and stretch every process's start (and its timeout) on a busy machine.
 */
const CLI_SLOTS = Math.max(1, availableParallelism());
let cliRunning = 0;
const cliWaiting: (() => void)[] = [];

/** Runs `work` (which spawns one `parley` process) once a slot is free; frees it when `work` settles. */
export async function inCliSlot<T>(work: () => Promise<T>): Promise<T> {
  if (cliRunning >= CLI_SLOTS) await new Promise<void>((resolve) => cliWaiting.push(resolve));
  else cliRunning++;
  try {
    return await work();
  } finally {
    const next = cliWaiting.shift();
    if (next) next();
    else cliRunning--;
  }
}

/**
 * Commands `runCli` always runs as a process: the servers (`serve`, and `sandbox` unless a
 * subcommand follows), which listen, log and wait for signals as a process does.
 */
function mustSpawn(args: readonly string[]): boolean {
  const [command, sub] = args;
  return command === 'serve' || (command === 'sandbox' && (sub === undefined || sub.startsWith('-')));
}

/** TEST_CLI=process: every `runCli` spawns the real binary (a run of the suite as users run `parley`). */
const ALWAYS_SPAWN = process.env.TEST_CLI === 'process';

/**
 * Runs the `parley` command (the build) with `env` as its whole environment (see `childEnv`) and
 * collects its output. It runs in a thread that keeps the CLI loaded (test/helpers/cli-thread.ts):
 * the same program, some milliseconds instead of a process's second. A command that must be the
 * real binary (its start, its exit, Node's own handling) uses `runCliProcess`.
 */
export function runCli(
  args: readonly string[],
  env: Record<string, string>,
  timeoutMs = CLI_TIMEOUT_MS,
): Promise<CliResult> {
  if (ALWAYS_SPAWN || mustSpawn(args)) return runCliProcess(args, env, timeoutMs);
  return inCliSlot(async () => {
    const { code, stdout, stderr } = await runInThread(args, childEnv(env), timeoutMs);
    return cliResult(args, code, stdout, stderr);
  });
}

/** Runs the real `parley` binary (the build) as a process of its own and collects its output. */
export function runCliProcess(
  args: readonly string[],
  env: Record<string, string>,
  timeoutMs = CLI_TIMEOUT_MS,
): Promise<CliResult> {
  return inCliSlot(() => spawnCli(args, env, timeoutMs));
}

function cliResult(args: readonly string[], code: number | null, stdout: string, stderr: string): CliResult {
  return {
    code,
    stdout,
    stderr,
    json<T>() {
      try {
        return JSON.parse(stdout) as T;
      } catch {
        throw new Error(`parley ${args.join(' ')} did not print JSON.\nstdout: ${stdout}\nstderr: ${stderr}`);
      }
    },
  };
}

function spawnCli(args: readonly string[], env: Record<string, string>, timeoutMs: number): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CLI_ENTRY, ...args], {
      cwd: ROOT,
      env: childEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`parley ${args.join(' ')} timed out\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve(cliResult(args, code, stdout, stderr));
    });
  });
}

/** A port nobody listens on right now, outside the range the kernel picks from (see `ownPortRange`). */
export function freePort(): Promise<number> {
  return freePortRange(1);
}

async function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * Ports the kernel never hands out on its own: outside its range for ephemeral ports (a client's
 * side of every connection, and `listen(0)`). A port picked inside that range can be taken by any
 * connection another test opens between the check and the listen (seen: EADDRINUSE on one of
 * four regions' ports, while other test files talked to PostgreSQL).
 */
function ownPortRange(): { from: number; to: number } {
  let [low, high] = [32_768, 60_999];
  try {
    const [a, b] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (a && b && a <= b) [low, high] = [a, b];
  } catch {
    // not Linux: the range above is Linux's default
  }
  // The larger of the two gaps around it, above the ports that need privileges.
  const below = { from: 10_000, to: Math.max(10_000, low) };
  const above = { from: Math.max(10_000, high + 1), to: 65_536 };
  return below.to - below.from >= above.to - above.from ? below : above;
}

/** Ports this process handed out already: free now, perhaps, but meant for a server not yet up. */
const handedOut = new Set<number>();

/**
 * The first of `count` consecutive free ports (for `--regions`, which listens on N..N+count-1),
 * none of them handed out before by this process: two picked one after the other for two servers
 * are never the same, though the first server may not be listening yet.
 */
export async function freePortRange(count: number): Promise<number> {
  const { from, to } = ownPortRange();
  for (let attempt = 0; attempt < 50; attempt++) {
    const first = from + Math.floor(Math.random() * (to - from - count));
    let ok = true;
    for (let i = 0; i < count && ok; i++) ok = !handedOut.has(first + i) && (await portIsFree(first + i));
    if (ok) {
      for (let i = 0; i < count; i++) handedOut.add(first + i);
      return first;
    }
  }
  throw new Error(`no ${count} consecutive free ports found`);
}

export interface ServeProcess {
  readonly child: ChildProcess;
  /** Everything the process printed so far. */
  output(): string;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `parley serve ... --json` as a child process and waits for its ready line. */
export function startServe(args: readonly string[], env: Record<string, string>, timeoutMs = CLI_TIMEOUT_MS) {
  return new Promise<ServeProcess & { ready: { regions: { region: string; url: string; baseUrl: string }[] } }>(
    (resolve, reject) => {
      const child = spawn(process.execPath, [...CLI_ENTRY, 'serve', '--json', ...args], {
        cwd: ROOT,
        env: childEnv({ LOG_LEVEL: 'warn', ...env }),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let settled = false;
      const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
      const timer = setTimeout(() => {
        if (settled) return;
        settled = true;
        child.kill('SIGKILL');
        reject(new Error(`parley serve did not become ready:\n${out}`));
      }, timeoutMs);
      const onData = (d: Buffer) => {
        out += d.toString();
        if (settled) return;
        const line = out.split('\n').find((l) => l.startsWith('{"ready":true'));
        if (!line) return;
        settled = true;
        clearTimeout(timer);
        resolve({
          child,
          ready: JSON.parse(line),
          output: () => out,
          async stop(signal: NodeJS.Signals = 'SIGTERM') {
            if (child.exitCode === null && child.signalCode === null) child.kill(signal);
            return exited;
          },
        });
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.on('exit', (code) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(new Error(`parley serve exited with ${code} before it was ready:\n${out}`));
      });
    },
  );
}

import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI_ENTRY, childEnv, freePort, ROOT } from '../helpers/cli.js';
import { type Finished, runToEnd } from '../helpers/run-to-end.js';
import { until } from '../helpers/wait.js';

/**
 * The README and docs/getting-started.md run top to bottom as a new user types them: every `sh`
 * block in order, each line through bash in a fresh scratch folder (its own ./data/), with
 *
 * - `npm` and `npx parley` pointing at this repository's build: `npm install` is not run again,
 *   since the suite's global setup has just built dist/ (as `npm install` does), `npm test` is
 *   this very suite, and `npm start` is the build's `serve`;
 * - the documented ports (3000 and 4000) replaced by free ones, so the test runs beside others;
 * - `examples/` of the repository in the scratch folder, as a clone has it;
 * - what a user copies by hand done the same way: the `export ...` line `parley demo` prints is
 *   applied to the shell of the following commands, and a placeholder such as `org_...` or
 *   `cnv_...` is the last ID of that kind an earlier command printed.
 *
 * A command that runs on (`npm start`, a line ending in `&`) is started and waited for; every
 * other command must exit 0, and a documented answer (`# {...}` under it) must have the same
 * fields as the real one. The last word is the echo bot's: "You said: hello".
 */

interface Line {
  readonly command: string;
  /** The `# {...}` answer documented right under it, if any. */
  readonly documented?: string;
}

/** The `sh` blocks of a page, as commands (continuations joined, comments dropped). */
function commandsOf(page: string): Line[] {
  const text = readFileSync(join(ROOT, page), 'utf8');
  const lines: Line[] = [];
  for (const block of text.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const raw = (block[1] ?? '').replace(/\\\n\s*/g, '');
    for (const line of raw.split('\n')) {
      const trimmed = line.trim();
      if (trimmed === '') continue;
      if (trimmed.startsWith('#')) {
        const last = lines.at(-1);
        const doc = trimmed.replace(/^#\s*/, '');
        if (last && last.documented === undefined && doc.startsWith('{')) {
          lines[lines.length - 1] = { ...last, documented: doc };
        }
        continue;
      }
      lines.push({ command: stripComment(trimmed) });
    }
  }
  return lines;
}

/** The line without its trailing `# comment` (a `#` outside quotes, after a space). */
function stripComment(line: string): string {
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1] ?? ''))) return line.slice(0, i).trimEnd();
  }
  return line;
}

/** Shell stand-ins for `npm` and `npx` that run this repository's build. */
function writeShims(bin: string): void {
  mkdirSync(bin);
  const cli = `"${process.execPath}" "${join(ROOT, ...CLI_ENTRY)}"`;
  const npm = `#!/bin/sh
case "$1" in
  install) echo "(built already by the test suite's setup)"; exit 0 ;;
  test) echo "(this is the test suite)"; exit 0 ;;
  start) shift; exec ${cli} serve "$@" ;;
esac
echo "npm $* is not part of the first hour" >&2; exit 127
`;
  const npx = `#!/bin/sh
if [ "$1" = parley ]; then shift; exec ${cli} "$@"; fi
echo "npx $* is not part of the first hour" >&2; exit 127
`;
  for (const [name, body] of [
    ['npm', npm],
    ['npx', npx],
  ] as const) {
    writeFileSync(join(bin, name), body);
    chmodSync(join(bin, name), 0o755);
  }
}

const PLACEHOLDER = /\b(org|agt|cnv|cmp|ep|eu|key)_\.\.\./g;

class FirstHour {
  readonly dir = mkdtempSync(join(tmpdir(), 'parley-first-hour-'));
  readonly env: NodeJS.ProcessEnv;
  readonly background: { child: ChildProcess; output: () => string }[] = [];
  /** Everything every command printed, in order: where a user copies IDs from. */
  private seen = '';

  constructor(
    readonly apiPort: number,
    readonly botPort: number,
  ) {
    writeShims(join(this.dir, 'bin'));
    symlinkSync(join(ROOT, 'examples'), join(this.dir, 'examples'));
    this.env = childEnv({ PATH: `${join(this.dir, 'bin')}:${process.env.PATH ?? ''}`, PORT: String(apiPort) });
    this.env.LOG_LEVEL = 'warn';
  }

  /** The command as this machine runs it: free ports, and the IDs a user would copy. */
  resolve(command: string): string {
    const ports = command
      .replaceAll('127.0.0.1:3000', `127.0.0.1:${this.apiPort}`)
      .replaceAll('127.0.0.1:4000', `127.0.0.1:${this.botPort}`)
      .replace(/\bPORT=4000\b/g, `PORT=${this.botPort}`);
    return ports.replace(PLACEHOLDER, (placeholder, kind: string) => {
      const ids = [...this.seen.matchAll(new RegExp(`\\b${kind}_[A-Za-z0-9]{10,}`, 'g'))];
      const id = ids.at(-1)?.[0];
      if (!id) throw new Error(`nothing printed so far gives ${placeholder} in: ${command}`);
      return id;
    });
  }

  /** Runs a command to its end in bash; resolves with its output. */
  async run(command: string): Promise<Finished> {
    const done = await runToEnd('bash', ['-c', command], { cwd: this.dir, env: this.env });
    this.seen += `${done.stdout}\n${done.stderr}\n`;
    this.applyExports(done.stdout);
    return done;
  }

  /** A command that runs on: started, then waited for until it serves. */
  async start(command: string): Promise<void> {
    // In a process group of its own, so that stopping it stops what the shell started.
    const child = spawn('bash', ['-c', command.replace(/&\s*$/, '')], {
      cwd: this.dir,
      env: this.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    this.background.push({ child, output: () => out });
    const exited = () => child.exitCode !== null || child.signalCode !== null;
    if (/\bnpm start\b/.test(command)) {
      await until(
        async () => {
          if (exited()) throw new Error(`the server stopped: ${out}`);
          return fetch(`http://127.0.0.1:${this.apiPort}/api/health`).then(
            (r) => r.ok,
            () => false,
          );
        },
        'the server to answer',
        60_000,
        100,
      );
    } else {
      await until(
        () => {
          if (exited()) throw new Error(`${command} stopped: ${out}`);
          return /listening|echo bot on/.test(out);
        },
        `${command} to listen`,
        60_000,
      );
    }
  }

  /** What a user pastes: the `export A=b C=d` line a command printed. */
  private applyExports(stdout: string): void {
    for (const m of stdout.matchAll(/^\s*export ((?:[A-Z_]+=\S+ ?)+)$/gm)) {
      for (const pair of (m[1] ?? '').trim().split(/\s+/)) {
        const at = pair.indexOf('=');
        this.env[pair.slice(0, at)] = pair.slice(at + 1);
      }
    }
  }

  async close(): Promise<void> {
    for (const { child } of this.background.reverse()) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const gone = new Promise((resolve) => child.once('exit', resolve));
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
      await gone;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The sorted field names of a JSON object written in the docs (values may be elided with "..."). */
const fieldsOf = (json: string): string[] => Object.keys(JSON.parse(json) as object).sort();

describe('the first hour, as a new user types it', () => {
  let hour: FirstHour | undefined;
  afterEach(async () => {
    await hour?.close();
    hour = undefined;
  });

  for (const page of ['README.md', 'docs/getting-started.md']) {
    it(`${page} runs top to bottom and the echo bot answers`, async () => {
      hour = new FirstHour(await freePort(), await freePort());
      const lines = commandsOf(page);
      expect(lines.some((l) => l.command.includes('--wait-reply'))).toBe(true);
      let last = '';
      for (const { command, documented } of lines) {
        const resolved = hour.resolve(command);
        if (/\bnpm start\b/.test(resolved) || /&\s*$/.test(resolved)) {
          await hour.start(resolved);
          continue;
        }
        const res = await hour.run(resolved);
        expect(res.code, `${page}: ${resolved}\n${res.stdout}${res.stderr}`).toBe(0);
        if (documented) {
          expect(fieldsOf(res.stdout), `${page}: ${resolved}\n${res.stdout}`).toEqual(fieldsOf(documented));
        }
        last = res.stdout;
        if (resolved.includes('--wait-reply')) {
          expect(res.stdout).toContain('the agent answered: You said: hello');
          // No warning on the way: the server was started with the private switch where the docs say.
          expect(res.stderr).toBe('');
        }
      }
      expect(last).not.toBe('');
    }, 240_000);
  }
});

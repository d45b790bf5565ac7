import { Worker } from 'node:worker_threads';

/**
 * `parley` commands run in worker threads that keep the program loaded, instead of a process each.
 * A process spends most of its 0.5 to 1 s of CPU starting Node and loading the CLI's modules; a
 * thread loads them once and then runs command after command in a few milliseconds of its own.
 *
 * A thread is as apart from the test as a process where it matters: its own environment (replaced
 * at every command), its own copy of every module (nothing cached is shared with the test's app),
 * its own event loop (SQLite's wait for a lock blocks the thread, never the test's server, which
 * can then commit), and its output collected whole. It runs the build (dist/), as `parley` does.
 * What differs: Node's own start and `cli/parley.js`, a command's handles left open (a process
 * would not end; the thread answers once the command's promise settles), and lines that pino
 * writes straight to file descriptor 1 (only `serve` and `sandbox` log at levels tests see). So
 * `runCli` spawns the real binary for those commands, and tests keep a few real-binary runs
 * (`runCliProcess`) per command family.
 */

export interface ThreadResult {
  code: number;
  stdout: string;
  stderr: string;
}

interface Call {
  readonly id: number;
  readonly resolve: (result: ThreadResult) => void;
  readonly reject: (err: Error) => void;
}

const WORKER = new URL('./cli-thread-worker.mjs', import.meta.url);

class CliThread {
  readonly worker = new Worker(WORKER);
  current: Call | undefined;
  dead = false;

  constructor(onDead: (thread: CliThread) => void) {
    this.worker.unref();
    this.worker.on('message', (result: ThreadResult & { id: number }) => {
      const call = this.current;
      if (!call || call.id !== result.id) return;
      this.current = undefined;
      this.worker.unref();
      call.resolve({ code: result.code, stdout: result.stdout, stderr: result.stderr });
    });
    // An error nothing caught ends the thread, as it would end a process: exit code 1, the error on stderr.
    this.worker.on('error', (err) => {
      this.dead = true;
      onDead(this);
      const call = this.current;
      this.current = undefined;
      call?.resolve({ code: 1, stdout: '', stderr: `${err.stack ?? err.message}\n` });
    });
    this.worker.on('exit', (code) => {
      this.dead = true;
      onDead(this);
      const call = this.current;
      this.current = undefined;
      call?.reject(new Error(`the parley thread ended (exit code ${code})`));
    });
  }

  run(id: number, args: readonly string[], env: NodeJS.ProcessEnv): Promise<ThreadResult> {
    return new Promise((resolve, reject) => {
      this.current = { id, resolve, reject };
      this.worker.ref();
      this.worker.postMessage({ id, args: [...args], env });
    });
  }
}

/** Threads not running a command now; a new one is started when none is (the caller bounds how many run at once). */
const idle: CliThread[] = [];
let nextId = 1;

function forget(thread: CliThread): void {
  const i = idle.indexOf(thread);
  if (i >= 0) idle.splice(i, 1);
}

/**
 * Runs `parley <args>` in a thread with exactly `env` as its environment. A command that outlives
 * `timeoutMs` is stopped with its thread (rejecting, as a process's timeout does).
 */
export async function runInThread(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<ThreadResult> {
  const thread = idle.pop() ?? new CliThread(forget);
  const id = nextId++;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      void thread.worker.terminate();
      reject(new Error(`parley ${args.join(' ')} timed out (in a thread)`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([thread.run(id, args, env), timedOut]);
  } finally {
    clearTimeout(timer);
    if (!thread.dead && thread.current === undefined) idle.push(thread);
  }
}

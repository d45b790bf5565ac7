// A `parley` that stays loaded: runs the build's program (dist/, what `parley` itself runs) once
// per message, in a worker thread of a test file, with the environment it is given and its output
// collected. Plain JavaScript: a worker thread loads no TypeScript. See test/helpers/cli-thread.ts.
import { parentPort } from 'node:worker_threads';
import { CommanderError } from 'commander';

const { runParley } = await import(new URL('../../dist/cli/run-program.js', import.meta.url).href);

/** Where the real program would end the process (commander's help, version, a refused argument). */
class Exit extends CommanderError {
  constructor(code) {
    super(code, 'parley.exit', '');
    this.code = code;
  }
}

const text = (chunk, encoding) =>
  typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString(typeof encoding === 'string' ? encoding : 'utf8');

/** Collects what `stream.write` is given (as a child's pipe would), until the returned function restores it. */
function collect(stream, sink) {
  const write = stream.write;
  stream.write = (chunk, encoding, callback) => {
    sink.push(text(chunk, encoding));
    const done = typeof encoding === 'function' ? encoding : callback;
    if (done) queueMicrotask(() => done());
    return true;
  };
  return () => {
    stream.write = write;
  };
}

parentPort.on('message', async ({ id, args, env }) => {
  for (const name of Object.keys(process.env)) delete process.env[name];
  Object.assign(process.env, env);
  process.exitCode = undefined;
  const stdout = [];
  const stderr = [];
  const restoreOut = collect(process.stdout, stdout);
  const restoreErr = collect(process.stderr, stderr);
  let code;
  try {
    await runParley(['node', 'parley', ...args], (exitCode) => {
      throw new Exit(exitCode);
    });
    code = typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof Exit) code = err.code;
    else {
      // What Node prints for an error that ends a process, and its exit code.
      stderr.push(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      code = 1;
    }
  } finally {
    restoreOut();
    restoreErr();
    process.exitCode = undefined;
  }
  parentPort.postMessage({ id, code, stdout: stdout.join(''), stderr: stderr.join('') });
});

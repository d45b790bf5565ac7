/**
 * A fork runs file after file (isolate: false), and a leaked timer or server would keep it alive
 * for ever once Vitest itself is gone (killed, or crashed): the fork ends a few seconds after it
 * loses its channel to Vitest, whatever it still holds open. Once per process.
 */
const key = Symbol.for('parley.test.exitWithVitest');
const holder = globalThis as { [key]?: true };
if (!holder[key] && process.send) {
  holder[key] = true;
  // Not process.exit: Vitest replaces it while a file runs.
  process.once('disconnect', () => {
    setTimeout(() => process.kill(process.pid, 'SIGKILL'), 5_000).unref();
  });
}

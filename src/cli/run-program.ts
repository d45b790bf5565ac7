import { registerCommands } from './commands.js';
import { createProgram } from './program.js';

/**
 * Runs the `parley` program on `argv` (shaped as `process.argv`: the node binary and the script,
 * then the arguments). `exit` ends the run where commander would end the process (its help, its
 * version, an argument it refuses: 0 for the first two, 2 otherwise); `main.ts` passes
 * `process.exit`. A failing command reports itself and sets `process.exitCode` (see `action`).
 */
export async function runParley(argv: readonly string[], exit: (code: number) => never): Promise<void> {
  const program = createProgram().exitOverride((err) => exit(err.exitCode === 0 ? 0 : 2));
  await registerCommands(program, argv.slice(2));
  await program.parseAsync([...argv]);
}

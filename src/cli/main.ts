import { registerCommands } from './commands.js';
import { createProgram } from './program.js';

const program = createProgram().exitOverride((err) => {
  process.exit(err.exitCode === 0 ? 0 : 2);
});

await registerCommands(program, process.argv.slice(2));
await program.parseAsync(process.argv);

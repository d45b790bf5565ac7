import { runParley } from './run-program.js';

await runParley(process.argv, (code) => process.exit(code));

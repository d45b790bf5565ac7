import { type Command, CommanderError } from 'commander';
import { ConfigError } from '../config.js';
import { isAppError } from '../shared/errors.js';

/** A failure the CLI reports as one line and a non-zero exit. */
export class CliError extends Error {}

export function fail(message: string): never {
  throw new CliError(message);
}

/** Adds the options every database command takes. */
export function dbOptions(cmd: Command): Command {
  return cmd
    .option('--region <region>', 'region whose database to use: us, eu, in or qa (env PARLEY_REGION)')
    .option('--data <dir>', 'data folder of the SQLite databases (env PARLEY_DATA_DIR)', undefined)
    .option('--json', 'print JSON');
}

/** Runs an action and turns known failures into `parley: <message>` and exit code 1. */
export function action<A extends unknown[]>(fn: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await fn(...args);
    } catch (err) {
      if (err instanceof CommanderError) throw err;
      const known = err instanceof CliError || err instanceof ConfigError || isAppError(err);
      const message = err instanceof Error ? err.message : String(err);
      process.stderr.write(`parley: ${known ? message : `unexpected error: ${message}`}\n`);
      process.exitCode = 1;
    }
  };
}

export function parseList(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
}

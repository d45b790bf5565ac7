import { Writable } from 'node:stream';
import { type Logger, pino } from 'pino';

/** A pino logger at `level` whose lines are kept in memory, for a test to read what was logged. */
export function captureLog(level = 'info'): { logger: Logger; text: () => string } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { logger: pino({ level }, sink), text: () => lines.join('') };
}

/**
 * Where a send's time goes inside Parley, one request at a time: loaded into the benchmark's
 * children with NODE_OPTIONS, it acts only in `parley serve` on PostgreSQL, where it notes, for
 * each `POST /api/channels/send`, when each statement left for PostgreSQL and when its answer came
 * back (node-postgres's `Client#query`), counted from the moment the request reached the server,
 * and when the answer was finished; and, within each statement, when node-postgres first wrote it
 * to its socket, which splits its time into node-postgres's part and the wait for PostgreSQL. At
 * exit it writes the medians of the last 1,000 sends as a Markdown table to SEND_TIMELINE_OUT. The
 * gaps between statements are Parley's own work and the provider call (the sandbox). Statements
 * that leave once the answer is finished are listed after it.
 *
 *   SEND_TIMELINE_OUT=/tmp/timeline.md NODE_OPTIONS="--import ./bench/send-timeline.mjs" \
 *     DATABASE_URL=postgres://postgres@127.0.0.1:5432/test \
 *     node --import tsx bench/send.ts --dist --no-statuses --dialects postgres --duration 2 --sequential 1000
 *
 * A diagnostic, not a product path: it wraps a driver method, so it is never loaded by Parley itself.
 */
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';

const out = process.env.SEND_TIMELINE_OUT;
if (out && process.argv.includes('serve') && process.env.DATABASE_URL) {
  const pg = createRequire(new URL('../package.json', import.meta.url))('pg');
  /** The send in progress (one at a time), and the finished ones. */
  let current;
  const done = [];

  /** Each connection's statement in flight: its first write to the socket is noted on it. */
  const inFlight = new WeakMap();
  const noteWrites = (connection) => {
    if (!connection?.stream || inFlight.has(connection)) return;
    inFlight.set(connection, undefined);
    const write = connection.stream.write;
    connection.stream.write = function (...args) {
      const statement = inFlight.get(connection);
      if (statement && statement.written === undefined) statement.written = performance.now();
      return write.apply(this, args);
    };
  };

  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (config, values, callback) {
    const send = current;
    const text = typeof config === 'string' ? config : (config?.text ?? config?.name ?? '?');
    const statement = { name: text.replace(/\s+/g, ' ').trim().slice(0, 60), sent: performance.now() };
    if (this.connection) {
      noteWrites(this.connection);
      inFlight.set(this.connection, statement);
    }
    const note = () => {
      statement.answered = performance.now();
      send?.statements.push(statement);
    };
    // node-postgres calls back when given a callback (pg.Pool does), and returns a promise otherwise.
    if (typeof values === 'function' || typeof callback === 'function') {
      const wrap =
        (fn) =>
        (...args) => {
          note();
          return fn(...args);
        };
      return typeof values === 'function'
        ? query.call(this, config, wrap(values))
        : query.call(this, config, values, wrap(callback));
    }
    const result = query.call(this, config, values, callback);
    result?.then?.(note, note);
    return result;
  };

  const emit = http.Server.prototype.emit;
  http.Server.prototype.emit = function (event, ...args) {
    const [request, response] = args;
    if (event === 'request' && request.method === 'POST' && request.url === '/api/channels/send') {
      const send = { start: performance.now(), statements: [] };
      current = send;
      response.on('finish', () => {
        send.end = performance.now();
        done.push(send);
        if (done.length > 1000) done.shift();
      });
    }
    return emit.call(this, event, ...args);
  };

  process.on('exit', () => {
    const median = (xs) => {
      const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
      return s.length ? s[Math.floor((s.length - 1) / 2)] : Number.NaN;
    };
    const ms = (x) => (x * 1000).toFixed(0);
    // Statements that left once the answer was finished are work done after it (not the send's time).
    const before = (s) => s.statements.filter((q) => q.sent < s.end);
    const after = (s) => s.statements.filter((q) => q.sent >= s.end);
    // The shape most sends had (the same statements in the same order), so steps line up.
    const shapes = new Map();
    for (const s of done) {
      const shape = `${before(s)
        .map((q) => q.name)
        .join(' > ')} | ${after(s)
        .map((q) => q.name)
        .join(' > ')}`;
      shapes.set(shape, [...(shapes.get(shape) ?? []), s]);
    }
    const [shape, sends] = [...shapes.entries()].sort((a, b) => b[1].length - a[1].length)[0] ?? [' | ', []];
    const lines = [
      `${sends.length} of the last ${done.length} sends made these statements in this order (medians, µs from the request's arrival):`,
      '',
      '| step | starts | ends | takes |',
      '| - | -: | -: | -: |',
    ];
    let previous = sends.map(() => 0);
    const row = (label, starts, ends) => {
      lines.push(
        `| ${label} | ${ms(median(starts))} | ${ms(median(ends))} | ${ms(median(ends.map((e, i) => e - starts[i])))} |`,
      );
    };
    const [beforeShape, afterShape] = shape.split(' | ');
    beforeShape.split(' > ').forEach((name, i) => {
      if (!name) return;
      const starts = sends.map((s) => before(s)[i].sent - s.start);
      const ends = sends.map((s) => before(s)[i].answered - s.start);
      const written = sends.map((s) => (before(s)[i].written ?? Number.NaN) - s.start);
      row('Parley (and the provider call, if between)', previous, starts);
      row(`statement \`${name}\``, starts, ends);
      row('of which: node-postgres, to its first write', starts, written);
      row('of which: from that write to the answer (the round trip, PostgreSQL and its commit)', written, ends);
      previous = ends;
    });
    row(
      'Parley, to the end of the answer',
      previous,
      sends.map((s) => s.end - s.start),
    );
    afterShape.split(' > ').forEach((name, i) => {
      if (!name) return;
      row(
        `after the answer: statement \`${name}\``,
        sends.map((s) => after(s)[i].sent - s.start),
        sends.map((s) => after(s)[i].answered - s.start),
      );
    });
    lines.push('', `Whole send inside the server: ${ms(median(sends.map((s) => s.end - s.start)))} µs (median).`);
    writeFileSync(out, `${lines.join('\n')}\n`);
  });
}

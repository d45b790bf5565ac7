import { once } from 'node:events';
import {
  closeSync,
  constants,
  createReadStream,
  createWriteStream,
  openSync,
  readSync,
  statSync,
  unlinkSync,
  type WriteStream,
} from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import type { Command } from 'commander';
import { ATTRIBUTE_KEY, isOrigin, ORIGINS } from '../../end-users/end-user.model.js';
import { MAX_BATCH } from '../../end-users/end-user.schemas.js';
import { createEndUsers } from '../../end-users/end-user.service.js';
import { getOrganization } from '../../orgs/org.service.js';
import { type DbFlags, withAdmin } from '../admin.js';
import { print, printJson } from '../output.js';
import { action, CliError, dbOptions, fail } from '../run.js';

/**
 * Columns the import reads as fields; tags are separated by `;` or `|`. Every other column is an
 * attribute named as its header (`--refuse-unknown-columns` stops the import instead).
 */
const COLUMNS = ['name', 'email', 'phone', 'tags'] as const;
type Column = (typeof COLUMNS)[number];
type Row = Partial<Record<Column, string>> & { attributes?: Record<string, string> };

interface ImportFlags extends DbFlags {
  org: string;
  origin: string;
  rejects?: string;
  refuseUnknownColumns?: boolean;
}

/** A record longer than this is an error (most often an unclosed quote swallowing the rest of the file). */
const MAX_RECORD = 1024 * 1024;

const csvCell = (value: string) => (/[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);
const csvLine = (cells: readonly string[]) => `${cells.map(csvCell).join(',')}\n`;

/** A CSV item becomes the same object a batch request would carry: empty cells are absent. */
function toItem(row: Row): Record<string, unknown> {
  const item: Record<string, unknown> = {};
  if (row.name) item.name = row.name;
  if (row.email) item.email = row.email;
  if (row.phone) item.phone = row.phone;
  if (row.tags) {
    item.tags = row.tags
      .split(/[;|]/)
      .map((t) => t.trim())
      .filter(Boolean);
  }
  if (row.attributes && Object.keys(row.attributes).length > 0) item.attributes = row.attributes;
  return item;
}

const reasonOf = (err: unknown) => {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOENT') return 'no such file or directory';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EISDIR') return 'it is a directory';
  if (code === 'ENOTDIR') return 'a part of the path is not a directory';
  return err instanceof Error ? err.message : String(err);
};

/** FILE must be a regular file this process can read. */
function checkInput(file: string): number {
  let size: number;
  try {
    const stat = statSync(file);
    if (!stat.isFile()) fail(`cannot read ${file}: it is not a regular file`);
    size = stat.size;
    closeSync(openSync(file, constants.O_RDONLY));
  } catch (err) {
    if (err instanceof CliError) throw err;
    fail(`cannot read ${file}: ${reasonOf(err)}`);
  }
  return size;
}

/**
 * The rejects file must be creatable before anything is imported, without touching what is there:
 * an existing file is opened for appending (not truncated), a new one is created and removed again.
 */
function checkRejectsPath(path: string): void {
  try {
    let exists = false;
    try {
      const stat = statSync(path);
      if (!stat.isFile()) fail(`cannot write the rejects file ${path}: it is not a regular file`);
      exists = true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if (exists) {
      closeSync(openSync(path, 'a'));
    } else {
      closeSync(openSync(path, 'wx'));
      unlinkSync(path);
    }
  } catch (err) {
    if (err instanceof CliError) throw err;
    fail(`cannot write the rejects file ${path}: ${reasonOf(err)}`);
  }
}

const lineBreaks = (text: string) => text.match(/\r\n|\r|\n/g)?.length ?? 0;

/** Line breaks before the first non-blank character: blank lines the parser skipped. */
function leadingBlankLines(text: string): number {
  const at = text.search(/[^\s]/);
  return lineBreaks(at === -1 ? text : text.slice(0, at));
}

/**
 * The first line of the record the parser could not read: the line after the last record read
 * (`line`), past any blank lines, found by reading the file from where that record ended.
 */
function lineOfFailedRecord(file: string, offset: number, line: number): number {
  const fd = openSync(file, 'r');
  try {
    const buffer = Buffer.alloc(64 * 1024);
    const read = readSync(fd, buffer, 0, buffer.length, offset);
    return (
      line +
      leadingBlankLines(
        buffer
          .subarray(0, read)
          .toString('utf8')
          .replace(/^\uFEFF/, ''),
      )
    );
  } finally {
    closeSync(fd);
  }
}

/**
 * The header's columns that are not fields: attributes named as written (their keys follow the
 * attribute rules), or, when refused, the reason the import stops before anything is imported.
 */
function unknownColumns(
  header: readonly string[],
  names: readonly string[],
  file: string,
  refuse: boolean,
): { index: number; name: string }[] {
  const out: { index: number; name: string }[] = [];
  for (const [index, raw] of header.entries()) {
    const lower = names[index] ?? '';
    if ((COLUMNS as readonly string[]).includes(lower) || raw.trim() === '') continue;
    out.push({ index, name: raw.trim() });
  }
  if (out.length === 0) return out;
  const list = out.map((c) => `"${c.name}"`).join(', ');
  if (refuse) fail(`${file} has columns other than name, email, phone, tags: ${list} (nothing was imported)`);
  const bad = out.filter((c) => !ATTRIBUTE_KEY.test(c.name));
  if (bad.length > 0) {
    fail(
      `${file}: the columns ${bad.map((c) => `"${c.name}"`).join(', ')} cannot be attributes (a key is 1 to 64 ` +
        'characters of A-Z, a-z, 0-9 and _); rename them or pass --refuse-unknown-columns (nothing was imported)',
    );
  }
  const seen = new Set<string>();
  for (const c of out) {
    if (seen.has(c.name)) fail(`${file}: the column "${c.name}" appears twice (nothing was imported)`);
    seen.add(c.name);
  }
  return out;
}

interface ParsedRecord {
  record: string[];
  raw: string;
  info: { bytes: number };
}

export function registerEndUserCommands(program: Command): void {
  const endusers = program.command('endusers').description('end-user records');
  dbOptions(
    endusers
      .command('import')
      .description(
        'import end users from a CSV file (columns name, email, phone, tags; any other column is an attribute), ' +
          'through the API rules',
      )
      .argument('<file>', 'CSV file with a header row'),
  )
    .requiredOption('--org <id>', 'organization ID')
    .option('--origin <origin>', `origin of the records: ${ORIGINS.join(', ')}`, 'imported')
    .option('--rejects <file>', 'CSV of rejected rows with reasons (default: <file>.rejects.csv, when any)')
    .option('--refuse-unknown-columns', 'stop, importing nothing, when a column is not name, email, phone or tags')
    .action(
      action(async (file: string, flags: ImportFlags) => {
        if (!isOrigin(flags.origin)) fail(`--origin must be one of ${ORIGINS.join(', ')}, got "${flags.origin}"`);
        const origin = flags.origin;
        // Both checked before anything is imported: a run that cannot read its input or write its
        // rejects must not stop half-way with some batches committed.
        const size = checkInput(file);
        const rejectsPath = flags.rejects ?? join(dirname(file), `${basename(file, extname(file))}.rejects.csv`);
        checkRejectsPath(rejectsPath);

        await withAdmin(flags, async ({ database, clock }) => {
          // Loaded here, not at start-up: `parley serve` never needs them.
          const [{ default: cliProgress }, { parse, CsvError }] = await Promise.all([
            import('cli-progress'),
            import('csv-parse'),
          ]);
          const org = await getOrganization(database.db, flags.org);
          const started = Date.now();
          const tty = process.stderr.isTTY === true && !flags.json;
          const bar = tty
            ? new cliProgress.SingleBar(
                { format: 'importing [{bar}] {percentage}% | {rows} rows | {created} created | {rejected} rejected' },
                cliProgress.Presets.shades_classic,
              )
            : undefined;
          bar?.start(Math.max(size, 1), 0, { rows: 0, created: 0, rejected: 0 });

          // Records as arrays, the header included, each with its raw text: line numbers are
          // counted here from the raw text (the parser's own count is the record's last line,
          // and counts a CRLF inside quotes twice). Records are taken in on_record, as they are
          // parsed, and the file is fed one chunk at a time: every record before a parse error is
          // imported, and memory stays at one chunk's records.
          const parsed: ParsedRecord[] = [];
          let csvError: Error | undefined;
          const parser = parse({
            bom: true,
            skip_empty_lines: true,
            trim: true,
            relax_column_count: true,
            info: true,
            raw: true,
            max_record_size: MAX_RECORD,
            on_record: (record) => {
              parsed.push(record as unknown as ParsedRecord);
              return null;
            },
          });
          parser.on('error', (err) => {
            csvError = err;
          });
          parser.resume();
          const input = createReadStream(file);

          let rows = 0;
          let created = 0;
          let rejected = 0;
          let rejects: WriteStream | undefined;
          const writeReject = async (line: number, row: Row, code: string, field: string, reason: string) => {
            if (!rejects) {
              rejects = createWriteStream(rejectsPath);
              rejects.write(csvLine(['line', ...COLUMNS, ...extra.map((e) => e.name), 'code', 'field', 'reason']));
            }
            const cells = [
              String(line),
              ...COLUMNS.map((c) => row[c] ?? ''),
              ...extra.map((e) => row.attributes?.[e.name] ?? ''),
              code,
              field,
              reason,
            ];
            if (!rejects.write(csvLine(cells))) {
              await once(rejects, 'drain');
            }
          };

          let batch: { line: number; row: Row }[] = [];
          let lastReport = 0;
          const flush = async () => {
            if (batch.length === 0) return;
            const current = batch;
            batch = [];
            const result = await createEndUsers(database.db, clock, org.id, {
              origin,
              endUsers: current.map((b) => toItem(b.row)),
            });
            created += result.created;
            for (const r of result.results) {
              if (r.status === 'created') continue;
              rejected++;
              const source = current[r.index];
              const first = r.duplicateOf === undefined ? undefined : current[r.duplicateOf];
              const reason = first ? `Line ${first.line} has the same ${r.field ?? 'value'}.` : r.error;
              if (source) await writeReject(source.line, source.row, r.code, r.field ?? '', reason);
            }
            if (bar) bar.update(input.bytesRead, { rows, created, rejected });
            else if (!flags.json && rows - lastReport >= 50_000) {
              lastReport = rows;
              process.stderr.write(`imported ${rows} rows: ${created} created, ${rejected} rejected\n`);
            }
          };

          let columns: (Column | undefined)[] | undefined;
          /** The columns that are attributes: their position and header. */
          let extra: { index: number; name: string }[] = [];
          let line = 1; // where the next raw text starts
          let afterRaw = '';
          let bytes = 0; // where the last record read ends in the file
          const take = async ({ record, raw, info }: ParsedRecord) => {
            // A raw text that begins with the \n of a CRLF whose \r ended the previous one.
            const text = afterRaw.endsWith('\r') && raw.startsWith('\n') ? raw.slice(1) : raw;
            const start = line + leadingBlankLines(text);
            line += lineBreaks(text);
            afterRaw = raw;
            bytes = info.bytes;
            if (!columns) {
              const names = record.map((h) => h.trim().toLowerCase());
              columns = names.map((h, i) =>
                (COLUMNS as readonly string[]).includes(h) && names.indexOf(h) === i ? (h as Column) : undefined,
              );
              if (!COLUMNS.slice(0, 3).some((c) => columns?.includes(c))) {
                fail(`${file} has none of the columns name, email, phone in its header row`);
              }
              extra = unknownColumns(record, names, file, flags.refuseUnknownColumns === true);
              return;
            }
            rows++;
            const row: Row = {};
            for (const [i, column] of columns.entries()) {
              const value = record[i];
              if (column && value) row[column] = value;
            }
            for (const { index, name } of extra) {
              const value = record[index];
              if (value) row.attributes = { ...row.attributes, [name]: value };
            }
            batch.push({ line: start, row });
            if (batch.length >= MAX_BATCH) await flush();
          };
          const takeParsed = async () => {
            for (const record of parsed.splice(0)) await take(record);
          };
          const settled = () => new Promise((resolve) => setImmediate(resolve));

          for await (const chunk of input) {
            parser.write(chunk);
            await settled();
            await takeParsed();
            if (csvError) break;
          }
          if (!csvError) {
            const ended = new Promise((resolve) => {
              parser.once('finish', resolve);
              parser.once('error', resolve);
            });
            parser.end();
            await ended;
            await takeParsed();
          }
          let parseError: { line: number; message: string } | undefined;
          if (csvError) {
            if (!(csvError instanceof CsvError)) throw csvError;
            input.destroy();
            rows++;
            const at = lineOfFailedRecord(file, bytes, line);
            parseError = { line: at, message: csvError.message.replace(/ at line \d+/, '') };
          }
          // What was read before a parse error is imported, as if the file ended there.
          await flush();
          if (parseError) {
            rejected++;
            await writeReject(
              parseError.line,
              {},
              'INVALID_CSV',
              '',
              `The CSV record starting here cannot be read (${parseError.message}); the import stopped here.`,
            );
          }
          if (!parseError) bar?.update(Math.max(size, 1), { rows, created, rejected });
          bar?.stop();
          const endRejects: WriteStream | undefined = rejects;
          if (endRejects) await new Promise<void>((resolve) => endRejects.end(resolve));

          const summary = {
            file,
            orgId: org.id,
            origin,
            rows,
            created,
            rejected,
            rejectsFile: rejected > 0 ? rejectsPath : null,
            ms: Date.now() - started,
            ...(parseError ? { error: { line: parseError.line, message: parseError.message } } : {}),
          };
          if (flags.json) printJson(summary);
          else {
            print(`${rows} rows: ${created} created, ${rejected} rejected (${summary.ms} ms)`);
            if (rejected > 0) print(`rejected rows and reasons: ${rejectsPath}`);
          }
          if (parseError) {
            fail(
              `${file}: the CSV record starting at line ${parseError.line} cannot be read (${parseError.message}); ` +
                `the import stopped there: ${created} of the ${rows - 1} rows before it were created, nothing ` +
                `from line ${parseError.line} on was imported`,
            );
          }
        });
      }),
    );
}

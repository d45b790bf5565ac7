import { once } from 'node:events';
import { createReadStream, createWriteStream, statSync, type WriteStream } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import type { Command } from 'commander';
import { isOrigin, ORIGINS } from '../../end-users/end-user.model.js';
import { MAX_BATCH } from '../../end-users/end-user.schemas.js';
import { createEndUsers } from '../../end-users/end-user.service.js';
import { getOrganization } from '../../orgs/org.service.js';
import { type DbFlags, withAdmin } from '../admin.js';
import { print, printJson } from '../output.js';
import { action, dbOptions, fail } from '../run.js';

/** Columns the import reads; others are ignored. Tags are separated by `;` or `|`. */
const COLUMNS = ['name', 'email', 'phone', 'tags'] as const;
type Column = (typeof COLUMNS)[number];
type Row = Partial<Record<Column, string>>;

interface ImportFlags extends DbFlags {
  org: string;
  origin: string;
  rejects?: string;
}

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
  return item;
}

export function registerEndUserCommands(program: Command): void {
  const endusers = program.command('endusers').description('end-user records');
  dbOptions(
    endusers
      .command('import')
      .description('import end users from a CSV file (columns name, email, phone, tags), through the API rules')
      .argument('<file>', 'CSV file with a header row'),
  )
    .requiredOption('--org <id>', 'organization ID')
    .option('--origin <origin>', `origin of the records: ${ORIGINS.join(', ')}`, 'imported')
    .option('--rejects <file>', 'CSV of rejected rows with reasons (default: <file>.rejects.csv, when any)')
    .action(
      action(async (file: string, flags: ImportFlags) => {
        if (!isOrigin(flags.origin)) fail(`--origin must be one of ${ORIGINS.join(', ')}, got "${flags.origin}"`);
        const origin = flags.origin;
        let size: number;
        try {
          size = statSync(file).size;
        } catch {
          fail(`cannot read ${file}`);
        }
        const rejectsPath = flags.rejects ?? join(dirname(file), `${basename(file, extname(file))}.rejects.csv`);

        await withAdmin(flags, async ({ database, clock }) => {
          // Loaded here, not at start-up: `parley serve` never needs them.
          const [{ default: cliProgress }, { parse }] = await Promise.all([
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

          const input = createReadStream(file);
          const parser = input.pipe(
            parse({
              bom: true,
              columns: (header: string[]) => header.map((h) => h.trim().toLowerCase()),
              skip_empty_lines: true,
              trim: true,
              relax_column_count: true,
              info: true,
            }),
          );

          let rows = 0;
          let created = 0;
          let rejected = 0;
          let rejects: WriteStream | undefined;
          const writeReject = async (line: number, row: Row, code: string, field: string, reason: string) => {
            if (!rejects) {
              rejects = createWriteStream(rejectsPath);
              rejects.write(csvLine(['line', ...COLUMNS, 'code', 'field', 'reason']));
            }
            if (!rejects.write(csvLine([String(line), ...COLUMNS.map((c) => row[c] ?? ''), code, field, reason]))) {
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

          let headerChecked = false;
          for await (const { record, info } of parser as AsyncIterable<{
            record: Record<string, string>;
            info: { lines: number };
          }>) {
            if (!headerChecked) {
              headerChecked = true;
              if (!COLUMNS.slice(0, 3).some((c) => c in record)) {
                fail(`${file} has none of the columns name, email, phone in its header row`);
              }
            }
            rows++;
            const row: Row = {};
            for (const c of COLUMNS) if (record[c]) row[c] = record[c];
            batch.push({ line: info.lines, row });
            if (batch.length >= MAX_BATCH) await flush();
          }
          await flush();
          bar?.update(Math.max(size, 1), { rows, created, rejected });
          bar?.stop();
          const endRejects = rejects;
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
          };
          if (flags.json) printJson(summary);
          else {
            print(`${rows} rows: ${created} created, ${rejected} rejected (${summary.ms} ms)`);
            if (rejected > 0) print(`rejected rows and reasons: ${rejectsPath}`);
          }
        });
      }),
    );
}

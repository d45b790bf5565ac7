import type { Command } from 'commander';
import type { JobRunner } from '../../jobs/job-runner.js';
import { createJobRunner } from '../../jobs/jobs.js';
import { createLogger } from '../../shared/logger.js';
import { type AdminContext, type DbFlags, withAdmin } from '../admin.js';
import { formatDate, formatTable, print, printJson } from '../output.js';
import { action, dbOptions, fail } from '../run.js';

/** A runner that only reads and writes the store: the server's nodes do the work. */
export async function withRunner<T>(admin: AdminContext, fn: (jobs: JobRunner) => Promise<T>): Promise<T> {
  const logger = createLogger({ ...admin.config, logLevel: 'warn' });
  const jobs = await createJobRunner(admin.config, admin.region.database, admin.database, admin.clock, logger);
  await jobs.init();
  try {
    return await fn(jobs);
  } finally {
    await jobs.stop();
  }
}

/** Background jobs: what is queued, running and dead, and replaying the dead. */
export function registerJobCommands(program: Command): void {
  const jobs = program.command('jobs').description('background jobs (provider webhooks, event deliveries)');

  dbOptions(jobs.command('list').description('jobs by queue: queued, running, dead')).action(
    action(async (flags: DbFlags) => {
      await withAdmin(flags, (admin) =>
        withRunner(admin, async (runner) => {
          const counts = await runner.counts();
          const queues = [...new Set(counts.map((c) => c.queue))];
          const rows = queues.map((queue) => {
            const of = (state: string) => counts.find((c) => c.queue === queue && c.state === state)?.count ?? 0;
            return { queue, queued: of('queued'), running: of('running'), dead: of('dead') };
          });
          if (flags.json) printJson(rows);
          else if (rows.length === 0) print('no jobs');
          else {
            print(
              formatTable(
                ['QUEUE', 'QUEUED', 'RUNNING', 'DEAD'],
                rows.map((r) => [r.queue, String(r.queued), String(r.running), String(r.dead)]),
              ),
            );
          }
        }),
      );
    }),
  );

  dbOptions(jobs.command('dead').description('jobs that failed their last attempt, oldest first'))
    .option('--queue <name>', 'only this queue')
    .action(
      action(async (flags: DbFlags & { queue?: string }) => {
        await withAdmin(flags, (admin) =>
          withRunner(admin, async (runner) => {
            const dead = await runner.listDead(flags.queue);
            if (flags.json) {
              printJson(dead.map(({ payload: _payload, ...job }) => job));
              return;
            }
            if (dead.length === 0) {
              print('no dead jobs');
              return;
            }
            print(
              formatTable(
                ['ID', 'QUEUE', 'FAILED', 'ATTEMPTS', 'ERROR'],
                dead.map((j) => [
                  j.id,
                  j.queue,
                  formatDate(j.failedAt),
                  String(j.attempts),
                  (j.error ?? '').replace(/\s+/g, ' ').slice(0, 100),
                ]),
              ),
            );
            print('\nreplay them with `npx parley jobs replay --all` (or `--id <id>`, `--queue <name>`)');
          }),
        );
      }),
    );

  dbOptions(jobs.command('replay').description('put dead jobs back on their queues as new first attempts'))
    .option('--id <id>', 'only this one (an ID from `jobs dead`)')
    .option('--queue <name>', 'only the dead jobs of this queue')
    .option('--all', 'every dead job')
    .action(
      action(async (flags: DbFlags & { id?: string; queue?: string; all?: boolean }) => {
        if (flags.id === undefined && flags.queue === undefined && !flags.all) {
          fail('say which dead jobs to replay: --id <id>, --queue <name> or --all');
        }
        await withAdmin(flags, (admin) =>
          withRunner(admin, async (runner) => {
            const filter = {
              ...(flags.id !== undefined ? { id: flags.id } : {}),
              ...(flags.queue !== undefined ? { queue: flags.queue } : {}),
            };
            const replayed = await runner.replayDead(filter);
            if (flags.id !== undefined && replayed.length === 0) fail(`no dead job "${flags.id}"`);
            if (flags.json) printJson({ replayed: replayed.length, ids: replayed.map((j) => j.id) });
            else
              print(
                `replayed ${replayed.length} dead job${replayed.length === 1 ? '' : 's'}; a running server works them`,
              );
          }),
        );
      }),
    );
}

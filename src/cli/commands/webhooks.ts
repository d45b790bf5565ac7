import type { Command } from 'commander';
import { WebhookProcessor } from '../../messaging/webhook.service.js';
import { createLogger } from '../../shared/logger.js';
import { type DbFlags, withAdmin } from '../admin.js';
import { formatDate, formatTable, print, printJson } from '../output.js';
import { action, dbOptions, fail } from '../run.js';
import { CLI_RETRY_DELAYS_MS } from './numbers.js';

/**
 * Provider webhooks Parley acknowledged but could not apply: `failed` (their work kept failing
 * after the retries: the job runner's dead letters of the `provider-webhook` queue, the same ones
 * `parley jobs dead --queue provider-webhook` lists and `parley jobs replay` puts back on the
 * queue) or `unrouted` (an inbound message for a phone number ID no number has: the unrouted
 * store). `retry` applies them in this process and says what became of each.
 */
export function registerWebhookCommands(program: Command): void {
  const webhooks = program.command('webhooks').description('provider webhooks kept because they could not be applied');

  dbOptions(webhooks.command('failed').description('list the failed and unrouted webhooks')).action(
    action(async (flags: DbFlags) => {
      await withAdmin(flags, async (admin) => {
        const processor = new WebhookProcessor(admin.database.db, admin.clock, createLogger(admin.config));
        const stored = await processor.listStored();
        if (flags.json) {
          printJson(stored);
          return;
        }
        if (stored.length === 0) {
          print('no failed or unrouted webhooks');
          return;
        }
        print(
          formatTable(
            ['ID', 'STATE', 'RECEIVED', 'FAILED', 'ATTEMPTS', 'ITEMS', 'ERROR'],
            stored.map((w) => [
              w.id,
              w.state,
              formatDate(w.receivedAt),
              formatDate(w.failedAt, '-'),
              String(w.attempts),
              String(w.items),
              (w.error ?? '').replace(/\s+/g, ' ').slice(0, 100),
            ]),
          ),
        );
        print('\nreplay them with `npx parley webhooks retry` (or `--id <id>` for one)');
      });
    }),
  );

  dbOptions(webhooks.command('retry').description('apply the failed and unrouted webhooks again'))
    .option('--id <id>', 'only this one (an ID from `webhooks failed`)')
    .action(
      action(async (flags: DbFlags & { id?: string }) => {
        await withAdmin(flags, async (admin) => {
          const processor = new WebhookProcessor(admin.database.db, admin.clock, createLogger(admin.config), {
            retryDelaysMs: CLI_RETRY_DELAYS_MS,
          });
          const results = await processor.replayStored(flags.id !== undefined ? { id: flags.id } : {});
          await processor.close();
          if (flags.id !== undefined && results.length === 0) fail(`no failed or unrouted webhook "${flags.id}"`);
          const count = (outcome: string) => results.filter((r) => r.outcome === outcome).length;
          const summary = {
            replayed: results.length,
            applied: count('applied'),
            failed: count('failed'),
            unrouted: count('unrouted'),
          };
          if (flags.json) printJson({ ...summary, results });
          else
            print(
              `replayed ${summary.replayed} webhooks: ${summary.applied} applied, ${summary.failed} still failing, ` +
                `${summary.unrouted} still without a number`,
            );
          if (summary.failed > 0) process.exitCode = 1;
        });
      }),
    );
}

import type { Command } from 'commander';
import { CLI_ACTOR } from '../../audit/audit.service.js';
import { endpointAddressWarning } from '../../events/address-warning.service.js';
import {
  createEndpoint,
  deleteEndpoint,
  enableEndpoint,
  listDeliveries,
  listEndpoints,
  orgOf,
  replayDelivery,
  rotateEndpointSecret,
} from '../../events/endpoint.service.js';
import { allowPrivateForCommands } from '../../events/private-switch-file.js';
import { secretBoxOf } from '../../numbers/index.js';
import { type DbFlags, withAdmin } from '../admin.js';
import { formatDate, formatTable, print, printJson } from '../output.js';
import { action, dbOptions } from '../run.js';
import { withRunner } from './jobs.js';

type Flags = DbFlags & { org?: string; id?: string };

/** Event endpoints: where an organization's events are delivered (an agent's hook when bound to one). */
export function registerEndpointCommands(program: Command): void {
  const endpoint = program.command('endpoint').description('event webhook endpoints (an agent’s hook, integrations)');

  dbOptions(endpoint.command('create').description('register an endpoint; its signing secret is shown this once'))
    .requiredOption('--org <id>', 'organization ID')
    .requiredOption(
      '--url <url>',
      'https:// address that receives the events (http:// only with PARLEY_WEBHOOK_ALLOW_PRIVATE)',
    )
    .option('--agent <id>', "only this agent's events (the agent's hook)")
    .option('--events <list>', 'comma-separated event types (default: all)')
    .action(
      action(async (flags: Flags & { url: string; agent?: string; events?: string }) => {
        await withAdmin(flags, async ({ config, database, clock, region }) => {
          const allowPrivate = allowPrivateForCommands(config, region.region);
          const deps = {
            db: database.db,
            clock,
            messaging: { secrets: secretBoxOf(config) },
            config: { events: { allowPrivate } },
          };
          const created = await createEndpoint(deps, {
            orgId: flags.org ?? '',
            url: flags.url,
            actor: CLI_ACTOR,
            ...(flags.agent !== undefined ? { agentId: flags.agent } : {}),
            ...(flags.events !== undefined ? { events: flags.events } : {}),
          });
          const out = {
            id: created.id,
            url: created.url,
            agentId: created.agentId,
            events: created.events,
            secret: created.secret,
          };
          const warning = await endpointAddressWarning(created.url, { allowPrivate });
          if (warning) process.stderr.write(`parley: warning: ${warning}\n`);
          if (flags.json) printJson(warning ? { ...out, warning } : out);
          else {
            print(`created endpoint ${out.id} → ${out.url}`);
            print(`  signing secret: ${out.secret}`);
            print('Copy it now: it is shown this once. Verify deliveries with any Standard Webhooks library.');
          }
        });
      }),
    );

  dbOptions(endpoint.command('list').description("list an organization's endpoints"))
    .requiredOption('--org <id>', 'organization ID')
    .action(
      action(async (flags: Flags) => {
        await withAdmin(flags, async ({ database }) => {
          const endpoints = await listEndpoints(database.db, flags.org ?? '');
          if (flags.json) printJson(endpoints);
          else if (endpoints.length === 0) print('no endpoints');
          else {
            print(
              formatTable(
                ['ID', 'URL', 'AGENT', 'EVENTS', 'STATE'],
                endpoints.map((e) => [
                  e.id,
                  e.url,
                  e.agentId ?? '-',
                  e.events.join(','),
                  e.disabledAt === null ? 'enabled' : `disabled ${formatDate(e.disabledAt)}: ${e.disabledReason ?? ''}`,
                ]),
              ),
            );
          }
        });
      }),
    );

  dbOptions(endpoint.command('delete').description('delete an endpoint and its deliveries'))
    .requiredOption('--id <id>', 'endpoint ID')
    .option('--org <id>', 'organization ID (checked when given)')
    .action(
      action(async (flags: Flags) => {
        await withAdmin(flags, async ({ database, clock }) => {
          const id = flags.id ?? '';
          await deleteEndpoint(database.db, flags.org ?? (await orgOf(database.db, { endpointId: id })), id, {
            actor: CLI_ACTOR,
            clock,
          });
          if (flags.json) printJson({ id, deleted: true });
          else print(`deleted endpoint ${id}`);
        });
      }),
    );

  dbOptions(endpoint.command('rotate-secret').description('a new signing secret; the old one signs too for 24 hours'))
    .requiredOption('--id <id>', 'endpoint ID')
    .option('--org <id>', 'organization ID (checked when given)')
    .action(
      action(async (flags: Flags) => {
        await withAdmin(flags, async ({ config, database, clock }) => {
          const id = flags.id ?? '';
          const org = flags.org ?? (await orgOf(database.db, { endpointId: id }));
          const deps = { db: database.db, clock, messaging: { secrets: secretBoxOf(config) } };
          const rotated = await rotateEndpointSecret(deps, org, id);
          if (flags.json) printJson(rotated);
          else {
            print(`new signing secret of ${id}: ${rotated.secret}`);
            print(`the previous secret also signs until ${formatDate(rotated.previousSecretValidUntil)}`);
          }
        });
      }),
    );

  dbOptions(endpoint.command('enable').description('turn a disabled endpoint back on'))
    .requiredOption('--id <id>', 'endpoint ID')
    .option('--org <id>', 'organization ID (checked when given)')
    .action(
      action(async (flags: Flags) => {
        await withAdmin(flags, async ({ database }) => {
          const id = flags.id ?? '';
          const enabled = await enableEndpoint(
            database.db,
            flags.org ?? (await orgOf(database.db, { endpointId: id })),
            id,
          );
          if (flags.json) printJson(enabled);
          else print(`enabled endpoint ${id}`);
        });
      }),
    );

  dbOptions(endpoint.command('deliveries').description("an endpoint's recent deliveries, newest first"))
    .requiredOption('--id <id>', 'endpoint ID')
    .option('--org <id>', 'organization ID (checked when given)')
    .option('--failed', 'only the failed ones')
    .action(
      action(async (flags: Flags & { failed?: boolean }) => {
        await withAdmin(flags, async ({ database }) => {
          const id = flags.id ?? '';
          const org = flags.org ?? (await orgOf(database.db, { endpointId: id }));
          const deliveries = await listDeliveries(database.db, org, id, { failed: flags.failed === true });
          if (flags.json) printJson(deliveries);
          else if (deliveries.length === 0) print('no deliveries');
          else {
            print(
              formatTable(
                ['ID', 'EVENT', 'TYPE', 'STATUS', 'ATTEMPTS', 'CODE', 'ERROR'],
                deliveries.map((d) => [
                  d.id,
                  d.eventId,
                  d.type,
                  d.status,
                  String(d.attempts),
                  d.lastStatusCode === null ? '-' : String(d.lastStatusCode),
                  (d.lastError ?? '').slice(0, 120),
                ]),
              ),
            );
          }
        });
      }),
    );

  dbOptions(endpoint.command('replay').description('send a delivery again (same event ID), from its first attempt'))
    .requiredOption('--delivery <id>', 'delivery ID (from `endpoint deliveries`)')
    .option('--org <id>', 'organization ID (checked when given)')
    .action(
      action(async (flags: Flags & { delivery: string }) => {
        await withAdmin(flags, async (admin) => {
          const org = flags.org ?? (await orgOf(admin.database.db, { deliveryId: flags.delivery }));
          const replayed = await withRunner(admin, (jobs) =>
            replayDelivery(admin.database.db, jobs, admin.clock, org, flags.delivery),
          );
          if (flags.json) printJson(replayed);
          else print(`delivery ${replayed.id} queued again; a running server sends it`);
        });
      }),
    );
}

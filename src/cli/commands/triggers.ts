import type { Command } from 'commander';
import { createTrigger, listTriggers, setTriggerEnabled, type Trigger } from '../../triggers/trigger.service.js';
import { type DbFlags, withAdmin } from '../admin.js';
import { formatTable, print, printJson } from '../output.js';
import { action, dbOptions } from '../run.js';

type Flags = DbFlags & { org?: string; agent?: string };

const describe = (t: Trigger) =>
  `${t.id} (${t.name}) of agent ${t.agentId}: template ${t.template} ${t.language}, ${t.enabled ? 'enabled' : 'disabled'}`;

/** Triggers: an agent's entry points, each with its opening template. */
export function registerTriggerCommands(program: Command): void {
  const trigger = program.command('trigger').description("an agent's entry points (POST /api/triggers/...)");

  dbOptions(trigger.command('create').description('create a trigger of an agent'))
    .requiredOption('--org <id>', 'organization ID')
    .requiredOption('--agent <id>', 'agent ID')
    .requiredOption('--name <name>', 'a name for people')
    .requiredOption('--template <name>', 'the opening template (an approved template name)')
    .requiredOption('--language <code>', 'the template language, xx_XX (such as en_US)')
    .option('--id <slug>', 'the trigger ID: 1 to 64 of a-z 0-9 _ - (default: made by Parley)')
    .action(
      action(async (flags: Flags & { name: string; template: string; language: string; id?: string }) => {
        await withAdmin(flags, async ({ database, clock }) => {
          const created = await createTrigger(database.db, clock, {
            orgId: flags.org ?? '',
            agentId: flags.agent ?? '',
            name: flags.name,
            template: flags.template,
            language: flags.language,
            ...(flags.id !== undefined ? { id: flags.id } : {}),
          });
          if (flags.json) printJson(created);
          else {
            print(`created trigger ${describe(created)}`);
            print(`  start it: POST /api/triggers/${created.agentId}/${created.id}`);
          }
        });
      }),
    );

  dbOptions(trigger.command('list').description("list an organization's triggers"))
    .requiredOption('--org <id>', 'organization ID')
    .option('--agent <id>', "only this agent's triggers")
    .action(
      action(async (flags: Flags) => {
        await withAdmin(flags, async ({ database }) => {
          const triggers = await listTriggers(database.db, flags.org ?? '', flags.agent);
          if (flags.json) printJson(triggers);
          else if (triggers.length === 0) print('no triggers');
          else {
            print(
              formatTable(
                ['ID', 'AGENT', 'NAME', 'TEMPLATE', 'LANGUAGE', 'STATE'],
                triggers.map((t) => [
                  t.id,
                  t.agentId,
                  t.name,
                  t.template,
                  t.language,
                  t.enabled ? 'enabled' : 'disabled',
                ]),
              ),
            );
          }
        });
      }),
    );

  for (const [verb, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    dbOptions(
      trigger
        .command(verb)
        .description(enabled ? 'let a trigger start conversations again' : 'refuse starts of a trigger (400)'),
    )
      .requiredOption('--org <id>', 'organization ID')
      .requiredOption('--agent <id>', 'agent ID')
      .requiredOption('--id <id>', 'trigger ID')
      .action(
        action(async (flags: Flags & { id: string }) => {
          await withAdmin(flags, async ({ database }) => {
            const changed = await setTriggerEnabled(database.db, {
              orgId: flags.org ?? '',
              agentId: flags.agent ?? '',
              id: flags.id,
              enabled,
            });
            if (flags.json) printJson(changed);
            else print(`${enabled ? 'enabled' : 'disabled'} trigger ${describe(changed)}`);
          });
        }),
      );
  }
}

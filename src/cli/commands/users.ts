import type { Command } from 'commander';
import { CLI_ACTOR, listAudit } from '../../audit/audit.service.js';
import { createUser, listUsers, removeUser, setUserPassword, type UserRef } from '../../dashboard/user.service.js';
import { type DbFlags, withAdmin } from '../admin.js';
import { formatDate, formatTable, print, printJson } from '../output.js';
import { action, dbOptions, fail } from '../run.js';

interface PasswordFlags {
  password?: string;
  passwordStdin?: boolean;
}

/** The password from --password or from standard input (its first line), never both. */
async function readPassword(flags: PasswordFlags): Promise<string> {
  if (flags.password !== undefined && flags.passwordStdin) fail('give --password or --password-stdin, not both');
  if (flags.password !== undefined) return flags.password;
  if (!flags.passwordStdin) fail('a password is needed: --password PASSWORD or --password-stdin');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const line = Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0] ?? '';
  if (!line) fail('--password-stdin read no password');
  return line;
}

function userRef(flags: { email?: string; id?: string }): UserRef {
  if (flags.email && flags.id) fail('give --email or --id, not both');
  if (flags.id) return { id: flags.id };
  if (flags.email) return { email: flags.email };
  return fail('name the user with --email or --id');
}

export function registerUserCommands(program: Command): void {
  const user = program.command('user').description('people who sign in to the dashboard');
  dbOptions(user.command('create').description('add a person to an organization'))
    .requiredOption('--org <id>', 'organization ID')
    .requiredOption('--email <email>', 'email address they sign in with')
    .requiredOption('--role <role>', 'owner, admin or member')
    .option('--password <password>', 'initial password (at least 10 characters)')
    .option('--password-stdin', 'read the password from standard input')
    .action(
      action(async (flags: DbFlags & PasswordFlags & { org: string; email: string; role: string }) => {
        const password = await readPassword(flags);
        await withAdmin(flags, async ({ config, database, clock }) => {
          const created = await createUser(
            database.db,
            clock,
            { orgId: flags.org, email: flags.email, role: flags.role.toLowerCase(), password, actor: CLI_ACTOR },
            config.dashboard.passwordCost,
          );
          if (flags.json) printJson({ id: created.id, email: created.email, role: created.role });
          else print(`created user ${created.id} (${created.email}, ${created.role})`);
        });
      }),
    );
  dbOptions(user.command('list').description("list an organization's people"))
    .requiredOption('--org <id>', 'organization ID')
    .action(
      action(async (flags: DbFlags & { org: string }) => {
        await withAdmin(flags, async ({ database }) => {
          const users = await listUsers(database.db, flags.org);
          if (flags.json) {
            printJson(users.map((u) => ({ id: u.id, email: u.email, role: u.role, createdAt: u.createdAt })));
          } else if (users.length === 0) print('no users');
          else {
            print(
              formatTable(
                ['ID', 'EMAIL', 'ROLE', 'CREATED'],
                users.map((u) => [u.id, u.email, u.role, formatDate(u.createdAt)]),
              ),
            );
          }
        });
      }),
    );
  dbOptions(user.command('remove').description('remove a person; their sessions end at once'))
    .requiredOption('--org <id>', 'organization ID')
    .option('--email <email>', 'their email address')
    .option('--id <id>', 'their user ID')
    .action(
      action(async (flags: DbFlags & { org: string; email?: string; id?: string }) => {
        const ref = userRef(flags);
        await withAdmin(flags, async ({ database, clock }) => {
          const removed = await removeUser(database.db, clock, flags.org, ref, CLI_ACTOR);
          if (flags.json) printJson({ id: removed.id, email: removed.email, removed: true });
          else print(`removed user ${removed.id} (${removed.email})`);
        });
      }),
    );
  dbOptions(user.command('password').description("set a person's password; their sessions end"))
    .requiredOption('--org <id>', 'organization ID')
    .option('--email <email>', 'their email address')
    .option('--id <id>', 'their user ID')
    .option('--password <password>', 'new password (at least 10 characters)')
    .option('--password-stdin', 'read the password from standard input')
    .action(
      action(async (flags: DbFlags & PasswordFlags & { org: string; email?: string; id?: string }) => {
        const ref = userRef(flags);
        const password = await readPassword(flags);
        await withAdmin(flags, async ({ config, database, clock }) => {
          const cost = config.dashboard.passwordCost;
          const updated = await setUserPassword(database.db, clock, flags.org, ref, password, CLI_ACTOR, cost);
          if (flags.json) printJson({ id: updated.id, email: updated.email, passwordChanged: true });
          else print(`password of ${updated.email} changed; their sessions have ended`);
        });
      }),
    );

  const audit = program.command('audit').description('the audit log');
  dbOptions(audit.command('list').description("an organization's audit log, newest first"))
    .requiredOption('--org <id>', 'organization ID')
    .option('--limit <n>', 'entries at most', '500')
    .action(
      action(async (flags: DbFlags & { org: string; limit: string }) => {
        const limit = Number(flags.limit);
        if (!Number.isInteger(limit) || limit < 1) fail(`--limit must be a positive integer, got "${flags.limit}"`);
        await withAdmin(flags, async ({ database }) => {
          const entries = await listAudit(database.db, flags.org, { limit });
          if (flags.json) printJson(entries);
          else if (entries.length === 0) print('no entries');
          else {
            print(
              formatTable(
                ['WHEN', 'ACTOR', 'ACTION', 'TARGET', 'DETAILS'],
                entries.map((e) => [
                  formatDate(e.at),
                  e.actor,
                  e.action,
                  `${e.targetType} ${e.targetId}`,
                  e.details ? JSON.stringify(e.details) : '',
                ]),
              ),
            );
          }
        });
      }),
    );
}

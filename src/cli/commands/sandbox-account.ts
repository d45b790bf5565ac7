import type { Command } from 'commander';
import { request } from 'undici';
import { readSandboxAddress } from '../../sandbox/index.js';
import { findAgentNumber } from '../../sandbox/sandbox.service.js';
import { type AdminContext, type DbFlags, withAdmin } from '../admin.js';
import { print, printJson } from '../output.js';
import { action, dbOptions, fail } from '../run.js';

type SandboxFlags = DbFlags & { sandboxUrl?: string };

/** POSTs to the running sandbox; its JSON answer, or the CLI error saying what went wrong. */
async function postToSandbox(admin: AdminContext, flags: SandboxFlags, path: string, body: unknown) {
  const url = flags.sandboxUrl ?? readSandboxAddress(admin.config.dataDir, admin.region.region);
  if (!url) fail('no running sandbox found for this region; start `npx parley serve` or pass --sandbox-url');
  let res: Awaited<ReturnType<typeof request>>;
  try {
    res = await request(`${url.replace(/\/$/, '')}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sandbox' },
      body: JSON.stringify(body),
    });
  } catch {
    fail(`the sandbox at ${url} cannot be reached; is \`npx parley serve\` running?`);
  }
  const answer = (await res.body.json().catch(() => ({}))) as Record<string, unknown>;
  if (res.statusCode !== 200) {
    const error = answer.error;
    const text =
      typeof error === 'string'
        ? error
        : typeof error === 'object' && error !== null
          ? String(
              (error as { error_data?: { details?: unknown }; message?: unknown }).error_data?.details ??
                (error as { message?: unknown }).message,
            )
          : String(res.statusCode);
    fail(`the sandbox refused: ${text}`);
  }
  return answer;
}

const count = (flag: string, value: string | undefined): number => {
  if (value === undefined) return 0;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 20) fail(`${flag} must be a whole number from 0 to 20, got "${value}"`);
  return n;
};

const marks = (n: number) => Array.from({ length: n }, (_, i) => `{{${i + 1}}}`).join(' ');

/** `parley sandbox template create|set-status` and `parley sandbox quality`: the sandbox plays the provider's account. */
export function registerSandboxAccountCommands(sandbox: Command): void {
  const template = sandbox.command('template').description("the sandbox account's templates");
  dbOptions(
    template.command('create').description('make a template in the sandbox account (PENDING until its status is set)'),
  )
    .requiredOption('--name <name>', 'template name (lower-case letters, digits, _)')
    .requiredOption('--language <code>', 'language, e.g. en_US')
    .requiredOption('--category <category>', 'MARKETING, UTILITY or AUTHENTICATION')
    .option('--body-params <n>', 'parameters of the body', '0')
    .option('--header-params <n>', 'parameters of a text header (none: no header)')
    .option('--sandbox-url <url>', 'sandbox address (default: the one `parley serve` started for this region)')
    .action(
      action(
        async (
          flags: SandboxFlags & {
            name: string;
            language: string;
            category: string;
            bodyParams: string;
            headerParams?: string;
          },
        ) => {
          const body = count('--body-params', flags.bodyParams);
          const header = count('--header-params', flags.headerParams);
          await withAdmin(flags, async (admin) => {
            const answer = await postToSandbox(admin, flags, '/v25.0/sandbox-waba/message_templates', {
              name: flags.name,
              language: flags.language,
              category: flags.category.toUpperCase(),
              components: [
                ...(flags.headerParams !== undefined
                  ? [{ type: 'HEADER', format: 'TEXT', text: `Hi ${marks(header)}` }]
                  : []),
                { type: 'BODY', text: `Hello ${marks(body)}` },
              ],
            });
            if (flags.json) printJson({ name: flags.name, language: flags.language, ...answer });
            else
              print(
                `made template ${flags.name} (${flags.language}), ${String(answer.status)}; approve it with \`parley sandbox template set-status\``,
              );
          });
        },
      ),
    );
  dbOptions(
    template
      .command('set-status')
      .description("change a sandbox template's status; the sandbox sends Parley the provider's status webhook"),
  )
    .requiredOption('--name <name>', 'template name')
    .requiredOption('--language <code>', 'language, e.g. en_US')
    .requiredOption('--status <status>', 'APPROVED, PENDING, REJECTED, PAUSED or DISABLED')
    .option('--sandbox-url <url>', 'sandbox address (default: the one `parley serve` started for this region)')
    .action(
      action(async (flags: SandboxFlags & { name: string; language: string; status: string }) => {
        await withAdmin(flags, async (admin) => {
          const answer = await postToSandbox(admin, flags, '/sandbox/templates/status', {
            name: flags.name,
            language: flags.language,
            status: flags.status.toUpperCase(),
          });
          if (answer.webhook !== 200) fail(`status set, but Parley's webhook answered ${String(answer.webhook)}`);
          if (flags.json) printJson(answer);
          else print(`template ${flags.name} (${flags.language}) is ${String(answer.status)}; Parley was told`);
        });
      }),
    );
  dbOptions(
    sandbox
      .command('quality')
      .description(
        "set the quality rating of an agent's sandbox number; the sandbox sends Parley the provider's webhook",
      ),
  )
    .requiredOption('--agent <id>', 'the agent whose number it is')
    .requiredOption('--rating <rating>', 'GREEN, YELLOW or RED')
    .option('--limit <tier>', 'messaging limit tier, e.g. TIER_1K')
    .option('--sandbox-url <url>', 'sandbox address (default: the one `parley serve` started for this region)')
    .action(
      action(async (flags: SandboxFlags & { agent: string; rating: string; limit?: string }) => {
        await withAdmin(flags, async (admin) => {
          const row = await findAgentNumber(admin.database.db, flags.agent);
          if (!row) fail(`unknown agent "${flags.agent}"`);
          if (!row.phone || !row.phone_number_id) fail(`agent ${flags.agent} has no messaging number assigned`);
          const answer = await postToSandbox(admin, flags, '/sandbox/quality', {
            phone_number_id: row.phone_number_id,
            display_phone_number: row.phone,
            rating: flags.rating.toUpperCase(),
            ...(flags.limit ? { limit: flags.limit.toUpperCase() } : {}),
          });
          if (answer.webhook !== 200) fail(`rating set, but Parley's webhook answered ${String(answer.webhook)}`);
          if (flags.json) printJson(answer);
          else
            print(
              `${row.phone} is ${String(answer.rating)} (${String(answer.limit)}); Parley was told (${String(answer.event)})`,
            );
        });
      }),
    );
}

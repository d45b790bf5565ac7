import type { Command } from 'commander';
import { getOrganization } from '../../orgs/org.service.js';
import { describeSendingRules, updateSendingRules } from '../../sending-rules/sending-rules.service.js';
import { type DbFlags, withAdmin } from '../admin.js';
import { print, printJson } from '../output.js';
import { action, dbOptions, fail } from '../run.js';

interface Flags extends DbFlags {
  org: string;
  quietHours?: string;
  timeZone?: string;
  marketingCap?: string;
}

/** `org update`: an organization's sending rules (quiet hours, marketing cap); each off until set. */
export function registerOrgSendingRuleCommands(org: Command): void {
  dbOptions(org.command('update').description("change an organization's sending rules (quiet hours, marketing cap)"))
    .requiredOption('--org <id>', 'organization ID')
    .option('--quiet-hours <HH:MM-HH:MM|off>', 'campaign deliveries wait through these hours, e.g. 21:00-08:00')
    .option('--time-zone <zone>', 'IANA time zone of the quiet hours, e.g. Europe/Lisbon')
    .option('--marketing-cap <n|off>', 'marketing templates an end user may receive in 24 hours')
    .action(
      action(async (flags: Flags) => {
        if (flags.quietHours === undefined && flags.timeZone === undefined && flags.marketingCap === undefined) {
          fail('give at least one of --quiet-hours, --time-zone, --marketing-cap');
        }
        let cap: number | null | undefined;
        if (flags.marketingCap !== undefined) {
          cap = flags.marketingCap === 'off' ? null : Number(flags.marketingCap);
          if (cap !== null && !/^\d+$/.test(flags.marketingCap))
            fail(`--marketing-cap must be a whole number or off, got "${flags.marketingCap}"`);
        }
        await withAdmin(flags, async ({ database, clock }) => {
          await getOrganization(database.db, flags.org);
          const rules = await updateSendingRules(database.db, clock, flags.org, {
            ...(flags.quietHours !== undefined
              ? { quietHours: flags.quietHours === 'off' ? null : flags.quietHours }
              : {}),
            ...(flags.timeZone !== undefined ? { timeZone: flags.timeZone } : {}),
            ...(cap !== undefined ? { marketingCap: cap } : {}),
          });
          if (flags.json) printJson({ orgId: flags.org, ...rules });
          else print(`organization ${flags.org}: ${describeSendingRules(rules)}`);
        });
      }),
    );
}

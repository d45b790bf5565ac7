import type { Command } from 'commander';
import { updateConsentRules } from '../../policies/consent-rules.service.js';
import { type DbFlags, withAdmin } from '../admin.js';
import { print, printJson } from '../output.js';
import { action, dbOptions, fail } from '../run.js';

type UpdateFlags = DbFlags & { org: string; optOutKeywords?: string; optInKeywords?: string; optOutReply?: string };

/**
 * `parley org update`: an organization's settings, each option changing one and leaving the others.
 * Today its opt-out rules (src/policies/); other settings add their options here.
 */
export function registerOrgUpdateCommand(org: Command): void {
  dbOptions(org.command('update').description("change an organization's settings (those given; the others stay)"))
    .requiredOption('--org <id>', 'organization ID')
    .option('--opt-out-keywords <words>', 'comma-separated words that opt an end user out, e.g. STOP,UNSUBSCRIBE')
    .option('--opt-in-keywords <words>', 'comma-separated words that opt an end user back in, e.g. START')
    .option('--opt-out-reply <text>', 'text sent back at once to who opted out ("" for none)')
    .action(
      action(async (flags: UpdateFlags) => {
        if (
          flags.optOutKeywords === undefined &&
          flags.optInKeywords === undefined &&
          flags.optOutReply === undefined
        ) {
          fail('nothing to change: give --opt-out-keywords, --opt-in-keywords or --opt-out-reply');
        }
        await withAdmin(flags, async (admin) => {
          const rules = await updateConsentRules(admin.database.db, admin.clock, flags.org, {
            optOutKeywords: flags.optOutKeywords,
            optInKeywords: flags.optInKeywords,
            optOutReply: flags.optOutReply,
          });
          if (flags.json) printJson({ id: flags.org, ...rules });
          else {
            print(`organization ${flags.org}: opt-out keywords ${rules.optOutKeywords.join(', ') || 'none'}`);
            print(`opt-in keywords ${rules.optInKeywords.join(', ') || 'none'}`);
            print(`opt-out reply: ${rules.optOutReply ?? 'none'}`);
          }
        });
      }),
    );
}

import type { Command } from 'commander';
import { getOrganization } from '../../orgs/org.service.js';
import { updateConsentRules } from '../../policies/consent-rules.service.js';
import { describeSendingRules, updateSendingRules } from '../../sending-rules/sending-rules.service.js';
import { type DbFlags, withAdmin } from '../admin.js';
import { print, printJson } from '../output.js';
import { action, dbOptions, fail } from '../run.js';
import { SENDING_RULE_OPTIONS, type SendingRuleFlags, sendingRuleChange } from './org-sending-rules.js';

type UpdateFlags = DbFlags &
  SendingRuleFlags & { org: string; optOutKeywords?: string; optInKeywords?: string; optOutReply?: string };

/**
 * `parley org update`: an organization's settings, each option changing one and leaving the others:
 * its opt-out rules (src/policies/) and its sending rules (src/sending-rules/).
 */
export function registerOrgUpdateCommand(org: Command): void {
  const command = dbOptions(
    org.command('update').description("change an organization's settings (those given; the others stay)"),
  )
    .requiredOption('--org <id>', 'organization ID')
    .option('--opt-out-keywords <words>', 'comma-separated words that opt an end user out, e.g. STOP,UNSUBSCRIBE')
    .option('--opt-in-keywords <words>', 'comma-separated words that opt an end user back in, e.g. START')
    .option('--opt-out-reply <text>', 'text sent back at once to who opted out ("" for none)');
  for (const [flag, description] of SENDING_RULE_OPTIONS) command.option(flag, description);
  command.action(
    action(async (flags: UpdateFlags) => {
      const consent =
        flags.optOutKeywords !== undefined || flags.optInKeywords !== undefined || flags.optOutReply !== undefined;
      const sending = sendingRuleChange(flags);
      if (!consent && !sending) {
        fail(
          'nothing to change: give --opt-out-keywords, --opt-in-keywords, --opt-out-reply, --quiet-hours, --time-zone or --marketing-cap',
        );
      }
      await withAdmin(flags, async (admin) => {
        const { db } = admin.database;
        await getOrganization(db, flags.org);
        const consentRules = consent
          ? await updateConsentRules(db, admin.clock, flags.org, {
              optOutKeywords: flags.optOutKeywords,
              optInKeywords: flags.optInKeywords,
              optOutReply: flags.optOutReply,
            })
          : undefined;
        const sendingRules = sending ? await updateSendingRules(db, admin.clock, flags.org, sending) : undefined;
        if (flags.json) {
          printJson({ id: flags.org, ...consentRules, ...sendingRules });
          return;
        }
        if (consentRules) {
          print(`organization ${flags.org}: opt-out keywords ${consentRules.optOutKeywords.join(', ') || 'none'}`);
          print(`opt-in keywords ${consentRules.optInKeywords.join(', ') || 'none'}`);
          print(`opt-out reply: ${consentRules.optOutReply ?? 'none'}`);
        }
        if (sendingRules) print(`organization ${flags.org}: ${describeSendingRules(sendingRules)}`);
      });
    }),
  );
}

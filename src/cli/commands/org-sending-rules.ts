import type { SendingRulesChange } from '../../sending-rules/sending-rules.service.js';
import { fail } from '../run.js';

/** The options of `parley org update` that set an organization's sending rules (quiet hours, marketing cap). */
export interface SendingRuleFlags {
  quietHours?: string;
  timeZone?: string;
  marketingCap?: string;
}

export const SENDING_RULE_OPTIONS: readonly [flag: string, description: string][] = [
  ['--quiet-hours <HH:MM-HH:MM|off>', 'campaign deliveries wait through these hours, e.g. 21:00-08:00'],
  ['--time-zone <zone>', 'IANA time zone of the quiet hours, e.g. Europe/Lisbon'],
  ['--marketing-cap <n|off>', 'marketing templates an end user may receive in 24 hours'],
];

/** The change the flags ask for, or undefined when they name no sending rule; a malformed cap fails. */
export function sendingRuleChange(flags: SendingRuleFlags): SendingRulesChange | undefined {
  if (flags.quietHours === undefined && flags.timeZone === undefined && flags.marketingCap === undefined) {
    return undefined;
  }
  let cap: number | null | undefined;
  if (flags.marketingCap !== undefined) {
    if (flags.marketingCap !== 'off' && !/^\d+$/.test(flags.marketingCap)) {
      fail(`--marketing-cap must be a whole number or off, got "${flags.marketingCap}"`);
    }
    cap = flags.marketingCap === 'off' ? null : Number(flags.marketingCap);
  }
  return {
    ...(flags.quietHours !== undefined ? { quietHours: flags.quietHours === 'off' ? null : flags.quietHours } : {}),
    ...(flags.timeZone !== undefined ? { timeZone: flags.timeZone } : {}),
    ...(cap !== undefined ? { marketingCap: cap } : {}),
  };
}

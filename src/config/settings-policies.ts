/** The settings of the policies that protect a number: its template catalogue, opt-out, its health. A part of the list in settings.ts. */
import { atLeast, boolean, type Setting } from './values.js';

export const policies = {
  PARLEY_TEMPLATE_SYNC_MS: {
    type: atLeast(100),
    default: 3_600_000,
    note: '1 hour',
    doc: "how often every number's templates (and its quality rating) are read again from the provider, by one node of the region each time (at least 100)",
  },
  PARLEY_OPT_OUT_STRICT: {
    type: boolean,
    default: false,
    doc: 'refuse every template (not only `MARKETING` ones) to an end user whose `consent.msgapp.status` is `denied`',
  },
} satisfies Record<string, Setting>;

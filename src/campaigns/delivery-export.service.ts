import type { AppContext } from '../context.js';
import { deliveriesOfCampaign } from './accept-recipients.js';

/** A campaign's deliveries as CSV, oldest first, a page at a time (any size, in constant memory). */

export const DELIVERY_CSV_COLUMNS = [
  'id',
  'to',
  'status',
  'error',
  'endUserId',
  'conversationId',
  'messageId',
  'createdAt',
  'sentAt',
  'updatedAt',
] as const;

const cell = (value: string) => (/[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);
const time = (ms: number | null) => (ms === null ? '' : new Date(ms).toISOString());

/** Calls `write` with the header line, then with each page's lines. */
export async function exportCampaignDeliveries(
  ctx: Pick<AppContext, 'db'>,
  orgId: string,
  campaignId: string,
  write: (chunk: string) => void | Promise<void>,
): Promise<number> {
  await write(`${DELIVERY_CSV_COLUMNS.join(',')}\n`);
  let cursor: string | undefined;
  let rows = 0;
  do {
    // deliveriesOfCampaign reads only the database of the context it is given.
    const page = await deliveriesOfCampaign(ctx as AppContext, orgId, campaignId, {
      limit: 500,
      ...(cursor ? { cursor } : {}),
    });
    let text = '';
    for (const d of page.data) {
      const cells = [
        d.id,
        d.to,
        d.status,
        d.error ?? '',
        d.endUserId ?? '',
        d.conversationId ?? '',
        d.messageId ?? '',
        time(d.createdAt),
        time(d.sentAt),
        time(d.updatedAt),
      ];
      text += `${cells.map(cell).join(',')}\n`;
    }
    rows += page.data.length;
    if (text) await write(text);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return rows;
}

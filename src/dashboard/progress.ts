import { DELIVERY_STATUSES, type DeliveryStatus } from '../campaigns/index.js';

/** A campaign's progress in words and numbers, for the bars of the campaign pages (no colour alone). */

export const STATUS_LABELS: Record<DeliveryStatus, string> = {
  queued: 'Queued',
  sending: 'Sending',
  sent: 'Sent',
  delivered: 'Delivered',
  read: 'Read',
  failed: 'Failed',
};

/** Statuses a delivery leaves no more on our side: the provider has it, or it failed. */
const HANDLED: readonly DeliveryStatus[] = ['sent', 'delivered', 'read', 'failed'];

export interface StatusBar {
  readonly key: DeliveryStatus;
  readonly label: string;
  readonly count: number;
  /** Whole percent of all deliveries ("0%" for a campaign with none). */
  readonly percent: number;
}

export interface Progress {
  readonly total: number;
  readonly bars: StatusBar[];
  /** Deliveries handled (sent, delivered, read or failed) and their whole percent. */
  readonly handled: number;
  readonly handledPercent: number;
  readonly text: string;
}

const percentOf = (n: number, total: number) => (total === 0 ? 0 : Math.round((n * 100) / total));

export function progressOf(counts: Record<DeliveryStatus, number>): Progress {
  const total = DELIVERY_STATUSES.reduce((sum, s) => sum + counts[s], 0);
  const handled = HANDLED.reduce((sum, s) => sum + counts[s], 0);
  const handledPercent = percentOf(handled, total);
  const failed = counts.failed > 0 ? `, ${counts.failed} failed` : '';
  return {
    total,
    bars: DELIVERY_STATUSES.map((key) => ({
      key,
      label: STATUS_LABELS[key],
      count: counts[key],
      percent: percentOf(counts[key], total),
    })),
    handled,
    handledPercent,
    text: total === 0 ? 'No deliveries yet' : `${handled} of ${total} handled (${handledPercent}%)${failed}`,
  };
}

import { type Static, Type } from '@sinclair/typebox';

/** GET /api/campaigns/<id>/stats: a campaign's funnel, its deliveries over time and its failures. */

export const CampaignStatsQuery = Type.Object(
  {
    bucket: Type.Optional(
      Type.Unsafe<'hour' | 'day'>({
        type: 'string',
        enum: ['hour', 'day'],
        default: 'day',
        description: 'hour or day (UTC); default day.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type CampaignStatsQuery = Static<typeof CampaignStatsQuery>;

const n = (description: string) => Type.Integer({ description });

export const CampaignStatsResponse = Type.Object(
  {
    totals: Type.Object({
      accepted: n('Deliveries made (webhook posts and segment sends).'),
      sent: n('Deliveries whose message the provider took.'),
      delivered: n('Delivered to the phone (read ones included).'),
      read: n('Read.'),
      replied: n('The end user wrote back in the delivery’s conversation within 72 hours of its send.'),
      failed: n('Failed: on Parley’s side (its error) or at the provider.'),
    }),
    buckets: Type.Array(
      Type.Object({
        start: n('Start of the hour or day (UTC), ms.'),
        sent: Type.Integer(),
        delivered: Type.Integer(),
        read: Type.Integer(),
        replied: Type.Integer(),
        failed: Type.Integer(),
      }),
      {
        description:
          'Each bucket counts what happened in it; from the first to the last with anything, none skipped. They add up to the totals.',
      },
    ),
    failures: Type.Array(Type.Object({ reason: Type.String(), count: Type.Integer() }), {
      description: 'Failures by reason, most first (at most 20).',
    }),
  },
  {
    title: 'CampaignStats',
    examples: [
      {
        totals: { accepted: 3, sent: 3, delivered: 2, read: 1, replied: 1, failed: 0 },
        buckets: [{ start: 1795392000000, sent: 3, delivered: 2, read: 1, replied: 1, failed: 0 }],
        failures: [],
      },
    ],
  },
);

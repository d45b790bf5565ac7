import { type Static, Type } from '@sinclair/typebox';
import { TemplateParameters } from '../channels/channel.schemas.js';

/** Requests and answers of /api/campaigns/<id>/sends: a campaign sent to a segment, now or later. */

export const SegmentSendBody = Type.Object(
  {
    segment: Type.String({ description: 'The segment ID (seg_...), of the campaign’s organization.' }),
    at: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: Number.MAX_SAFE_INTEGER,
        description: 'When to send, ms since epoch (up to a year ahead); absent or past: at once.',
      }),
    ),
    parameters: Type.Optional(TemplateParameters),
  },
  {
    title: 'SegmentSendRequest',
    additionalProperties: false,
    examples: [{ segment: 'seg_3kTq9ZpW0bLm2XcV7nR4sA', at: 1795400000000 }],
  },
);
export type SegmentSendBody = Static<typeof SegmentSendBody>;

export const SegmentSendParams = Type.Object({ campaignId: Type.String(), sendId: Type.String() });

const Counts = Type.Object(
  {
    members: Type.Integer({ description: 'Members of the segment read so far.' }),
    accepted: Type.Integer({ description: 'Deliveries made.' }),
    duplicates: Type.Integer({ description: 'Members this send had already made a delivery for.' }),
    optedOut: Type.Integer({ description: 'Members whose msgapp consent is denied: no delivery.' }),
    skipped: Type.Integer({ description: 'Members without a phone number (or with one that is not valid).' }),
  },
  { description: 'Progress through the segment; members = accepted + duplicates + optedOut + skipped.' },
);

export const SegmentSendResponse = Type.Object(
  {
    id: Type.String({ description: 'snd_ and 22 characters.' }),
    status: Type.Unsafe<'scheduled' | 'running' | 'done' | 'canceled'>({
      type: 'string',
      enum: ['scheduled', 'running', 'done', 'canceled'],
    }),
    at: Type.Integer({ description: 'When it runs (or ran), ms since epoch.' }),
    segment: Type.String(),
    segmentName: Type.String(),
    counts: Counts,
    error: Type.Union([Type.String(), Type.Null()], { description: 'Why a send ended without running; else null.' }),
    createdAt: Type.Integer(),
    startedAt: Type.Union([Type.Integer(), Type.Null()]),
    finishedAt: Type.Union([Type.Integer(), Type.Null()]),
  },
  {
    title: 'SegmentSend',
    examples: [
      {
        id: 'snd_3kTq9ZpW0bLm2XcV7nR4sA',
        status: 'scheduled',
        at: 1795400000000,
        segment: 'seg_3kTq9ZpW0bLm2XcV7nR4sA',
        segmentName: 'VIPs on pro',
        counts: { members: 0, accepted: 0, duplicates: 0, optedOut: 0, skipped: 0 },
        error: null,
        createdAt: 1795386969828,
        startedAt: null,
        finishedAt: null,
      },
    ],
  },
);
export type SegmentSendResponse = Static<typeof SegmentSendResponse>;

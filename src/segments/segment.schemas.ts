import { type Static, Type } from '@sinclair/typebox';
import { EndUserSchema, MAX_INTEGER, MAX_TAG } from '../end-users/end-user.schemas.js';

/** Requests and answers of /api/segments: a segment is a saved filter of an organization's end users. */

const Tag = Type.String({ minLength: 1, maxLength: 2 * MAX_TAG });
const Tags = Type.Array(Tag, { minItems: 1, maxItems: 50 });
const Time = Type.Integer({ minimum: 0, maximum: MAX_INTEGER, description: 'ms since epoch' });

export const SegmentFilter = Type.Object(
  {
    tags: Type.Optional(
      Type.Object(
        {
          any: Type.Optional({ ...Tags, description: 'Records carrying at least one of these tags.' }),
          all: Type.Optional({ ...Tags, description: 'Records carrying every one of these tags.' }),
        },
        { additionalProperties: false },
      ),
    ),
    origin: Type.Optional(
      Type.Unsafe<'inbound' | 'imported' | 'manual'>({ type: 'string', enum: ['inbound', 'imported', 'manual'] }),
    ),
    attributes: Type.Optional(
      Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()]), {
        description:
          'Every key must hold this value (at most 20 keys); numbers and booleans compare as their JSON text, as ' +
          'the attribute= list filter does.',
      }),
    ),
    consent: Type.Optional(
      Type.Unsafe<'granted' | 'not_denied'>({
        type: 'string',
        enum: ['granted', 'not_denied'],
        description: 'granted: msgapp consent granted. not_denied: anything but denied (unknown or none too).',
      }),
    ),
    lastSeenAfter: Type.Optional({
      ...Time,
      description: 'Last seen at or after (ms); never-seen records do not match.',
    }),
    lastSeenBefore: Type.Optional({ ...Time, description: 'Last seen before (ms); never-seen records do not match.' }),
    createdAfter: Type.Optional({ ...Time, description: 'Created at or after (ms).' }),
  },
  {
    additionalProperties: false,
    description: 'Conditions combine with AND. An empty filter is every end user of the organization.',
  },
);
export type SegmentFilter = Static<typeof SegmentFilter>;

export const SegmentCreateBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, description: 'Trimmed; 1 to 100 characters.' }),
    filter: SegmentFilter,
  },
  {
    title: 'SegmentCreateRequest',
    additionalProperties: false,
    examples: [
      {
        name: 'VIPs on pro',
        filter: { tags: { any: ['vip'] }, attributes: { plan: 'pro' }, consent: 'not_denied' },
      },
    ],
  },
);
export type SegmentCreateBody = Static<typeof SegmentCreateBody>;

export const SegmentSchema = Type.Object(
  {
    id: Type.String({ description: 'seg_ and 22 characters.' }),
    name: Type.String(),
    filter: SegmentFilter,
    count: Type.Integer({ description: 'How many end users match now (counted when answered).' }),
    createdAt: Type.Integer({ description: 'ms since epoch' }),
  },
  {
    title: 'Segment',
    examples: [
      {
        id: 'seg_3kTq9ZpW0bLm2XcV7nR4sA',
        name: 'VIPs on pro',
        filter: { tags: { any: ['vip'] }, attributes: { plan: 'pro' }, consent: 'not_denied' },
        count: 1280,
        createdAt: 1795386969828,
      },
    ],
  },
);

export const SegmentParams = Type.Object({ segmentId: Type.String() });

export const SegmentListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
    cursor: Type.Optional(Type.String({ maxLength: 300, description: 'nextCursor of the previous page.' })),
  },
  { additionalProperties: false },
);
export type SegmentListQuery = Static<typeof SegmentListQuery>;

export const SegmentList = Type.Object(
  {
    data: Type.Array(SegmentSchema),
    nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'null on the last page.' }),
  },
  { title: 'SegmentList' },
);

export const SegmentMembers = Type.Object(
  {
    data: Type.Array(EndUserSchema),
    nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'null on the last page.' }),
  },
  { title: 'SegmentMembers', description: 'The end users matching the segment now, newest first.' },
);

export const SegmentDeleted = Type.Object(
  { id: Type.String(), deleted: Type.Literal(true) },
  { title: 'SegmentDeleted' },
);

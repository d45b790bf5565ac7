import { type Static, type TSchema, Type } from '@sinclair/typebox';
import Ajv from 'ajv';
import { describeValidation } from '../http/errors.js';
import { CONSENT_STATUSES, ORIGINS } from './end-user.model.js';

/** A plain string enum (not anyOf of literals), so a wrong value reads "must be one of ...". */
const StringEnum = <T extends readonly string[]>(values: T, options: { description?: string } = {}) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const OriginSchema = StringEnum(ORIGINS, {
  description: 'How the record came in: inbound, imported or manual.',
});

const Name = Type.String({ minLength: 1, maxLength: 200, description: 'Display name; trimmed.' });
const Email = Type.String({ maxLength: 320, description: 'Email address; stored trimmed and lower-cased.' });
const Phone = Type.String({
  maxLength: 40,
  description:
    'Phone number, international (`+4420...`) or national in the organization default country; stored in E.164.',
});
const Tag = Type.String({ minLength: 1, maxLength: 64 });
const Tags = Type.Array(Tag, { maxItems: 100, description: 'Free-form tags; duplicates are dropped.' });
const E164 = Type.String({ description: 'E.164 phone number, e.g. +14155552671.' });

const ConsentInput = Type.Object(
  {
    status: StringEnum(CONSENT_STATUSES),
    updatedAt: Type.Optional(Type.Integer({ minimum: 0, description: 'ms since epoch; defaults to now.' })),
    source: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Defaults to "api".' })),
  },
  { additionalProperties: false },
);

const ChannelIdentifiersInput = Type.Object(
  { msgapp: Type.Optional(Phone) },
  { additionalProperties: false, description: 'Per-channel identifiers; msgapp is a phone number.' },
);
const ConsentMapInput = Type.Object(
  { msgapp: Type.Optional(ConsentInput) },
  { additionalProperties: false, description: 'Per-channel consent.' },
);

const itemFields = {
  name: Type.Optional(Name),
  email: Type.Optional(Email),
  phone: Type.Optional(Phone),
  tags: Type.Optional(Tags),
  channelIdentifiers: Type.Optional(ChannelIdentifiersInput),
  consent: Type.Optional(ConsentMapInput),
};

export const EndUserCreateBody = Type.Object(
  { origin: OriginSchema, ...itemFields },
  {
    additionalProperties: false,
    description: 'At least one of name, email, phone. Unknown fields are refused.',
  },
);
export type EndUserCreateBody = Static<typeof EndUserCreateBody>;

export const EndUserBatchItem = Type.Object(itemFields, {
  additionalProperties: false,
  description: 'One record of a batch: the create body without origin.',
});
export type EndUserBatchItem = Static<typeof EndUserBatchItem>;

export const MAX_BATCH = 1000;

export const EndUserBatchBody = Type.Object(
  {
    origin: OriginSchema,
    endUsers: Type.Array(EndUserBatchItem, { minItems: 1, maxItems: MAX_BATCH }),
  },
  { additionalProperties: false },
);
export type EndUserBatchBody = Static<typeof EndUserBatchBody>;

/** What the batch route validates up front; items are checked one by one so one bad item fails alone. */
export const EndUserBatchEnvelope = Type.Object(
  {
    origin: OriginSchema,
    endUsers: Type.Array(Type.Unknown(), { minItems: 1, maxItems: MAX_BATCH }),
  },
  { additionalProperties: false },
);

export const EndUserPatchBody = Type.Object(
  {
    name: Type.Optional(Nullable(Name)),
    email: Type.Optional(Nullable(Email)),
    phone: Type.Optional(Nullable(Phone)),
    tags: Type.Optional(Nullable(Tags)),
    channelIdentifiers: Type.Optional(
      Nullable(
        Type.Object(
          { msgapp: Type.Optional(Nullable(Phone)) },
          { additionalProperties: false, description: 'Merged per channel; a null channel removes it.' },
        ),
      ),
    ),
    consent: Type.Optional(
      Nullable(
        Type.Object(
          { msgapp: Type.Optional(Nullable(ConsentInput)) },
          { additionalProperties: false, description: 'Merged per channel; a null channel removes it.' },
        ),
      ),
    ),
  },
  {
    additionalProperties: false,
    description:
      'JSON merge patch: omitted fields stay, null clears, tags are replaced, channelIdentifiers and consent ' +
      'merge per channel. _id, origin, createdAt, updatedAt and lastSeenAt are read-only.',
  },
);
export type EndUserPatchBody = Static<typeof EndUserPatchBody>;

const ConsentState = Type.Object({
  status: StringEnum(CONSENT_STATUSES),
  updatedAt: Type.Integer({ description: 'ms since epoch' }),
  source: Type.String(),
});

export const EndUserSchema = Type.Object(
  {
    _id: Type.String({ description: 'Record ID, used in by-ID paths.' }),
    name: Nullable(Type.String()),
    email: Nullable(Type.String({ description: 'Trimmed, lower-cased.' })),
    phone: Nullable(Type.String({ description: 'E.164.' })),
    tags: Type.Array(Type.String()),
    origin: OriginSchema,
    channelIdentifiers: Type.Object({ msgapp: Type.Optional(E164) }, { description: '{} when none.' }),
    consent: Type.Object({ msgapp: Type.Optional(ConsentState) }, { description: '{} when none.' }),
    createdAt: Type.Integer({ description: 'ms since epoch' }),
    lastSeenAt: Nullable(Type.Integer({ description: 'ms since epoch of the last inbound message; null if none' })),
    updatedAt: Type.Integer({ description: 'ms since epoch' }),
  },
  { description: 'An end-user record. Absent values: null (name, email, phone, lastSeenAt), [] or {}.' },
);

export const EndUserIdParams = Type.Object({ endUserId: Type.String({ minLength: 1, maxLength: 64 }) });

export const EndUserListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
    cursor: Type.Optional(Type.String({ maxLength: 300, description: 'nextCursor of the previous page.' })),
    origin: Type.Optional(
      Type.String({ description: 'inbound, imported or manual; any other value is 400 INVALID_ORIGIN.' }),
    ),
    tag: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Records carrying this tag.' })),
    email: Type.Optional(Type.String({ maxLength: 320, description: 'Exact email, normalized first.' })),
    phone: Type.Optional(Type.String({ maxLength: 40, description: 'Exact phone, normalized first.' })),
    q: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'Prefix of the name (any case), email or phone.' }),
    ),
    updatedSince: Type.Optional(Type.Integer({ minimum: 0, description: 'Records updated at or after (ms).' })),
  },
  { additionalProperties: false },
);
export type EndUserListQuery = Static<typeof EndUserListQuery>;

export const EndUserList = Type.Object({
  data: Type.Array(EndUserSchema),
  nextCursor: Nullable(Type.String({ description: 'Pass as cursor for the next page; null on the last page.' })),
});

export const EndUserDeleted = Type.Object({ _id: Type.String(), deleted: Type.Literal(true) });

const BatchCreated = Type.Object({
  index: Type.Integer({ description: 'Position in the request.' }),
  status: Type.Literal('created'),
  endUser: EndUserSchema,
});
const BatchFailed = Type.Object({
  index: Type.Integer({ description: 'Position in the request.' }),
  status: Type.Literal('failed'),
  error: Type.String(),
  code: Type.String({ description: 'INVALID_BODY, DUPLICATE_ENDUSER or CREATE_FAILED.' }),
  field: Type.Optional(Type.String()),
  existingId: Type.Optional(Type.String()),
  duplicateOf: Type.Optional(Type.Integer({ description: 'Earlier index in this batch with the same value.' })),
});

export const EndUserBatchResult = Type.Object({
  created: Type.Integer(),
  failed: Type.Integer(),
  results: Type.Array(Type.Union([BatchCreated, BatchFailed]), { description: 'One per item, in input order.' }),
});
export type BatchItemFailed = Static<typeof BatchFailed>;
export type BatchItemResult = Static<typeof BatchCreated> | BatchItemFailed;

const itemAjv = new Ajv.default({ allErrors: false, coerceTypes: false, removeAdditional: false, strict: false });
const checkItem = itemAjv.compile(EndUserBatchItem);

/** Validates one batch item against the same schema the OpenAPI document shows. */
export function validateBatchItem(
  value: unknown,
): { ok: true; item: EndUserBatchItem } | { ok: false; message: string; field?: string } {
  if (checkItem(value)) return { ok: true, item: value as EndUserBatchItem };
  const { message, field } = describeValidation(checkItem.errors ?? [], 'body');
  return { ok: false, message: message.replace(/^Invalid body/, 'Invalid item'), ...(field ? { field } : {}) };
}

import { type Static, type TSchema, Type } from '@sinclair/typebox';
import Ajv from 'ajv';
import { CodedError, describeValidation } from '../http/errors.js';
import { CONSENT_STATUSES, MAX_ATTRIBUTE_TEXT, MAX_ATTRIBUTES, ORIGINS } from './end-user.model.js';

/** Integers the API takes (times, limits) stay within what a JavaScript number holds exactly. */
export const MAX_INTEGER = Number.MAX_SAFE_INTEGER;
/** Limits that apply once a value is trimmed; the schemas' maxLength only bounds the raw text. */
export const MAX_NAME = 200;
export const MAX_TAG = 64;

/** A plain string enum (not anyOf of literals), so a wrong value reads "must be one of ...". */
const StringEnum = <T extends readonly string[]>(values: T, options: { description?: string } = {}) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const OriginSchema = StringEnum(ORIGINS, {
  description: 'How the record came in: inbound, imported or manual.',
});

const Name = Type.String({
  minLength: 1,
  maxLength: 2 * MAX_NAME,
  description: `Display name: trimmed, then 1 to ${MAX_NAME} characters with at least one visible character.`,
});
const Email = Type.String({ maxLength: 320, description: 'Email address; stored trimmed and lower-cased.' });
const Phone = Type.String({
  maxLength: 40,
  description:
    'Phone number, international (`+4420...`) or national in the organization default country; stored in E.164.',
});
const Tag = Type.String({
  minLength: 1,
  maxLength: 2 * MAX_TAG,
  description: `A tag: trimmed, then 1 to ${MAX_TAG} characters.`,
});
const Tags = Type.Array(Tag, { maxItems: 100, description: 'Free-form tags; duplicates are dropped.' });
const E164 = Type.String({ description: 'E.164 phone number, e.g. +14155552671.' });

const ConsentInput = Type.Object(
  {
    status: StringEnum(CONSENT_STATUSES),
    updatedAt: Type.Optional(
      Type.Integer({ minimum: 0, maximum: MAX_INTEGER, description: 'ms since epoch; defaults to now.' }),
    ),
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

const AttributeValue = Type.Union([Type.String(), Type.Number(), Type.Boolean()]);
const ATTRIBUTES_TEXT =
  `At most ${MAX_ATTRIBUTES} keys of 1 to 64 characters A-Z, a-z, 0-9 and _; values are strings (at most ` +
  `${MAX_ATTRIBUTE_TEXT} characters), numbers or booleans.`;
// Keys, their count and string lengths are checked in end-user-input.ts, where the message names the key.
const AttributesInput = Type.Record(Type.String(), AttributeValue, {
  description: `Custom attributes. ${ATTRIBUTES_TEXT}`,
  examples: [{ plan: 'pro', seats: 12, trial: false }],
});

const itemFields = {
  name: Type.Optional(Name),
  email: Type.Optional(Email),
  phone: Type.Optional(Phone),
  tags: Type.Optional(Tags),
  channelIdentifiers: Type.Optional(ChannelIdentifiersInput),
  consent: Type.Optional(ConsentMapInput),
  attributes: Type.Optional(AttributesInput),
};

export const EndUserCreateBody = Type.Object(
  { origin: OriginSchema, ...itemFields },
  {
    title: 'EndUserCreateRequest',
    examples: [
      { origin: 'manual', name: 'Ada Lovelace', email: 'ada@example.com', phone: '+14155550100', tags: ['vip'] },
    ],
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
  { title: 'EndUserBatchRequest', additionalProperties: false },
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
    attributes: Type.Optional(
      Nullable(
        Type.Record(Type.String(), Nullable(AttributeValue), {
          description: `Merged key by key: a null value removes the key; null for the whole object removes all. ${ATTRIBUTES_TEXT}`,
        }),
      ),
    ),
  },
  {
    title: 'EndUserPatch',
    examples: [{ name: 'Ada King', tags: ['vip', '2026'] }],
    additionalProperties: false,
    description:
      'JSON merge patch: omitted fields stay, null clears, tags are replaced, channelIdentifiers and consent ' +
      'merge per channel, attributes merge per key. _id, origin, createdAt, updatedAt and lastSeenAt are read-only.',
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
    attributes: Type.Record(Type.String(), AttributeValue, { description: 'Custom attributes; {} when none.' }),
    createdAt: Type.Integer({ description: 'ms since epoch' }),
    lastSeenAt: Nullable(Type.Integer({ description: 'ms since epoch of the last inbound message; null if none' })),
    updatedAt: Type.Integer({ description: 'ms since epoch' }),
  },
  {
    title: 'EndUser',
    examples: [
      {
        _id: 'eu_3kTq9ZpW0bLm2XcV7nR4sA',
        name: 'Ada Lovelace',
        email: 'ada@example.com',
        phone: '+14155550100',
        tags: ['vip'],
        origin: 'manual',
        channelIdentifiers: { msgapp: '+14155550100' },
        consent: {},
        attributes: { plan: 'pro', seats: 12 },
        createdAt: 1795386969828,
        lastSeenAt: null,
        updatedAt: 1795386969828,
      },
    ],
    description: 'An end-user record. Absent values: null (name, email, phone, lastSeenAt), [] or {}.',
  },
);

// No length or alphabet rule here: an ID no record can have is 404 NOT_FOUND, not a 400 (spec 7.2).
export const EndUserIdParams = Type.Object({
  endUserId: Type.String({ description: 'The `_id` of the record.' }),
});

export const EndUserListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50, description: 'Decimal digits.' })),
    cursor: Type.Optional(Type.String({ maxLength: 300, description: 'nextCursor of the previous page.' })),
    origin: Type.Optional(
      Type.String({ description: 'inbound, imported or manual; any other value is 400 INVALID_ORIGIN.' }),
    ),
    tag: Type.Optional(
      Type.String({ minLength: 1, maxLength: 2 * MAX_TAG, description: 'Records carrying this tag (trimmed).' }),
    ),
    email: Type.Optional(Type.String({ maxLength: 320, description: 'Exact email, normalized first.' })),
    phone: Type.Optional(Type.String({ maxLength: 40, description: 'Exact phone, normalized first.' })),
    q: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description:
          'Prefix of the name (any case), of the email, or of the phone: `+1415` and `1415` match +1415...; with ' +
          'a default country, a national number too (`07400` in GB matches +447400...).',
      }),
    ),
    updatedSince: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_INTEGER,
        description: 'Records updated at or after this time (ms since epoch, decimal digits).',
      }),
    ),
    attribute: Type.Optional(
      Type.Array(Type.String({ minLength: 3, maxLength: 1100 }), {
        maxItems: 10,
        description:
          '`key:value`, repeatable (up to 10, all must match): records whose attribute `key` is `value`. Numbers ' +
          'and booleans compare as their JSON text (`seats:12`, `trial:false`).',
        examples: [['plan:pro']],
      }),
    ),
  },
  { additionalProperties: false },
);
export type EndUserListQuery = Static<typeof EndUserListQuery>;

export const EndUserList = Type.Object(
  {
    data: Type.Array(EndUserSchema),
    nextCursor: Nullable(Type.String({ description: 'Pass as cursor for the next page; null on the last page.' })),
  },
  { title: 'EndUserList' },
);

export const EndUserDeleted = Type.Object(
  { _id: Type.String(), deleted: Type.Literal(true) },
  { title: 'EndUserDeleted' },
);

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

export const EndUserBatchResult = Type.Object(
  {
    created: Type.Integer(),
    failed: Type.Integer(),
    results: Type.Array(Type.Union([BatchCreated, BatchFailed]), { description: 'One per item, in input order.' }),
  },
  { title: 'EndUserBatchResult' },
);
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

/** The methods each end-user path answers (HEAD wherever GET works); every other one is 405. */
export const ALLOW = {
  collection: 'GET, HEAD, POST',
  batch: 'POST',
  byId: 'GET, HEAD, PATCH, DELETE',
} as const;
export type EndUserPath = keyof typeof ALLOW;

export type EndUserOperation = 'list' | 'create' | 'batch' | 'get' | 'update' | 'delete';

const PATH_OF: Record<EndUserOperation, EndUserPath> = {
  list: 'collection',
  create: 'collection',
  batch: 'batch',
  get: 'byId',
  update: 'byId',
  delete: 'byId',
};

const coded = (description: string, extra: Record<string, unknown> = {}) =>
  Type.Ref(CodedError, { description, ...extra });

const INVALID_URL_TEXT =
  'INVALID_URL: the path does not match /api/endusers/{endUserId}: an empty ID (`/api/endusers/`) or more ' +
  'segments (`/api/endusers/a/b`), with any method; answered before the key is checked.';
const INVALID_BODY_TEXT =
  'INVALID_BODY: malformed JSON, an unknown field, a wrong type, an invalid email or phone, a blank name, an ' +
  'attribute breaking its rules (key, count, length, type); `field` names the field at fault.';

const BAD_REQUEST: Record<EndUserOperation, string> = {
  list:
    'INVALID_BODY: a malformed query value (limit, cursor, updatedSince, tag, email, phone, q, attribute), an integer not ' +
    'written in decimal digits or out of range, or an unknown parameter; `field` names it. INVALID_ORIGIN: ' +
    '`origin` is not exactly one of inbound, imported, manual.',
  create: `${INVALID_BODY_TEXT} Also a missing or unknown origin. CREATE_FAILED: the database refused the record for a reason other than a duplicate, or stayed too busy to take it; retry.`,
  batch:
    'INVALID_BODY: malformed JSON, an unknown field, a missing or unknown origin, no items or more than 1,000. ' +
    'Items are checked one by one: their own failures are in the 200 answer.',
  get: INVALID_URL_TEXT,
  update: `${INVALID_BODY_TEXT} Also a read-only field (_id, origin, createdAt, updatedAt, lastSeenAt). UPDATE_FAILED: the email or phone is on another record (\`field\`, \`existingId\`), or the database refused the change. ${INVALID_URL_TEXT}`,
  delete:
    'DELETE_FAILED: the database refused the delete (no rule of the stock schema does). INVALID_BODY: a body ' +
    `that is not valid JSON (DELETE takes no body). ${INVALID_URL_TEXT}`,
};

/**
 * The documented error answers of one end-user operation, each naming its codes, in the coded
 * envelope. 405 is documented on every operation of a path, with its Allow header: an OpenAPI path
 * lists only the methods it has, and the 405 answers the ones it has not.
 */
export function endUserErrors(op: EndUserOperation, bodyLimit: number): Record<number, TSchema> {
  const allow = ALLOW[PATH_OF[op]];
  const out: Record<number, TSchema> = {
    400: coded(BAD_REQUEST[op]),
    401: coded('UNAUTHORIZED: missing, malformed, unknown or revoked API key.'),
    403: coded(
      'FORBIDDEN: the key lacks End-users or is not organization-scoped, or the organization is on the free plan.',
    ),
    405: coded(
      `METHOD_NOT_ALLOWED: any method other than ${allow} on this path. Decided from the method and path alone, ` +
        'before the key is checked or the body read.',
      {
        headers: {
          Allow: { type: 'string', enum: [allow], description: 'The methods this path supports.' },
        },
      },
    ),
  };
  out[500] = coded(
    'INTERNAL: an unexpected failure; the body carries no details (the log has them, with the request ID).',
  );
  out[503] = coded('SERVICE_UNAVAILABLE: the server is shutting down; retry after the seconds in Retry-After.');
  if (PATH_OF[op] === 'byId') {
    out[404] = coded('NOT_FOUND: no end user with this ID in the organization of the key.');
  }
  if (op === 'create') {
    out[409] = coded('DUPLICATE_ENDUSER: the email or phone is on another record (`field`, `existingId`).');
  }
  if (op === 'create' || op === 'batch' || op === 'update' || op === 'delete') {
    out[413] = coded(
      `PAYLOAD_TOO_LARGE: the body is over this server's limit of ${bodyLimit} bytes.` +
        (op === 'batch' ? ' The limit applies to the whole batch: send fewer items per request.' : ''),
    );
  }
  return out;
}

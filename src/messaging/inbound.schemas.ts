import { Type } from '@sinclair/typebox';

/**
 * What an inbound message carries beside its text, as the conversation history shows it (and
 * `message.received` sends it, with `media.url`): one schema per part, each with an example.
 */

export const InboundMediaSchema = Type.Object(
  {
    id: Type.String({ description: 'The media ID (`med_...`): `GET /api/media/{id}` serves the bytes.' }),
    mimeType: Type.String({ description: 'Its type, as the provider gave it.' }),
    size: Type.Union([Type.Integer(), Type.Null()], { description: 'Bytes; null until it is stored.' }),
    sha256: Type.Union([Type.String(), Type.Null()], {
      description: "Lower-case hex SHA-256 of the bytes (checked against the provider's).",
    }),
    filename: Type.Optional(Type.String({ description: "A document's file name." })),
    available: Type.Boolean({
      description: 'Whether the bytes can be fetched: false when the download kept failing, or past the retention.',
    }),
    voice: Type.Optional(Type.Boolean({ description: 'An audio message recorded as a voice note.' })),
    animated: Type.Optional(Type.Boolean({ description: 'An animated sticker.' })),
    url: Type.Optional(
      Type.String({ description: '`message.received` only: the absolute address of `GET /api/media/{id}`.' }),
    ),
  },
  {
    title: 'InboundMedia',
    description: 'The file of an image, audio, video, document or sticker message, downloaded and kept by Parley.',
    examples: [
      {
        id: 'med_4ZpQ8sKq2nLm6RtPz0XcVa',
        mimeType: 'image/jpeg',
        size: 183422,
        sha256: '3f0a8c2e5d1b7a9f4c6e8d0b2a4c6e8f0a2c4e6a8c0e2a4c6e8a0c2e4a6c8e0a',
        available: true,
      },
    ],
  },
);

export const InboundLocationSchema = Type.Object(
  {
    latitude: Type.Number(),
    longitude: Type.Number(),
    name: Type.Optional(Type.String()),
    address: Type.Optional(Type.String()),
  },
  { title: 'InboundLocation', examples: [{ latitude: 38.7223, longitude: -9.1393, name: 'Lisbon office' }] },
);

export const InboundReplySchema = Type.Object(
  {
    kind: Type.Union([Type.Literal('button'), Type.Literal('list')], {
      description: '`button`: a reply button (or a template quick reply); `list`: a list row.',
    }),
    id: Type.String({ description: 'The ID the button or row was sent with (a quick reply: its payload).' }),
    title: Type.String(),
    description: Type.Optional(Type.String({ description: "A list row's description." })),
  },
  { title: 'InboundReply', examples: [{ kind: 'button', id: 'refund', title: 'Refund' }] },
);

export const InboundReactionSchema = Type.Object(
  {
    messageId: Type.String({ description: "The provider's ID of the message reacted to." }),
    emoji: Type.String({ description: 'Empty when the user took the reaction back.' }),
  },
  { title: 'InboundReaction', examples: [{ messageId: 'wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTdF', emoji: '👍' }] },
);

export const InboundContactSchema = Type.Object(
  {
    name: Type.String(),
    phones: Type.Array(
      Type.Object({ phone: Type.String(), waId: Type.Optional(Type.String()), type: Type.Optional(Type.String()) }),
    ),
    emails: Type.Array(Type.Object({ email: Type.String(), type: Type.Optional(Type.String()) })),
    organization: Type.Optional(Type.String()),
  },
  {
    title: 'InboundContact',
    examples: [
      { name: 'Rui Costa', phones: [{ phone: '+351 912 345 678', waId: '351912345678', type: 'CELL' }], emails: [] },
    ],
  },
);

/** The optional fields an inbound item adds, by kind. */
export const INBOUND_FIELDS = {
  media: Type.Optional(InboundMediaSchema),
  location: Type.Optional(InboundLocationSchema),
  reply: Type.Optional(InboundReplySchema),
  reaction: Type.Optional(InboundReactionSchema),
  contacts: Type.Optional(Type.Array(InboundContactSchema)),
  replyTo: Type.Optional(Type.String({ description: "The provider's ID of the message this one replies to." })),
};

import { Type } from '@sinclair/typebox';
import { MAX_PHONE_INPUT } from '../shared/phone.js';

/** The body of `POST /api/sandbox/inbound`: who writes, and one kind of message (checked in sandbox-inbound-kinds.ts). */

const file = (kind: string, types: string, example: Record<string, unknown>) =>
  Type.Optional(
    Type.Object(
      {
        data: Type.String({ minLength: 1, description: 'The file, base64.' }),
        mimeType: Type.String({ minLength: 1, maxLength: 128, description: `Its type: ${types}.` }),
        filename: Type.Optional(Type.String({ maxLength: 240, description: "The file's name (documents show it)." })),
        caption: Type.Optional(
          Type.String({
            maxLength: 1024,
            description: 'Images, videos and documents: the caption (or give it as `text`).',
          }),
        ),
      },
      {
        additionalProperties: false,
        description: `A${kind === 'image' ? 'n' : ''} ${kind} the user sends.`,
        examples: [example],
      },
    ),
  );

export const SandboxInboundBody = Type.Object(
  {
    convId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: 'The agent whose number receives the message; required with organization keys.',
      }),
    ),
    from: Type.String({
      maxLength: MAX_PHONE_INPUT,
      description: 'The user writing in, in international format.',
      examples: ['+14155550100'],
    }),
    text: Type.Optional(
      Type.String({
        maxLength: 4096,
        description: 'A text message; beside an image, video or document, its caption.',
      }),
    ),
    name: Type.Optional(Type.String({ maxLength: 256, description: "The user's profile name." })),
    image: file('image', '`image/jpeg` or `image/png`, at most 5 MB', {
      data: '/9j/4AAQSkZJRgABAQ...',
      mimeType: 'image/jpeg',
      caption: 'The parcel arrived like this',
    }),
    video: file('video', '`video/mp4` or `video/3gpp`, at most 16 MB', {
      data: 'AAAAIGZ0eXBpc29t...',
      mimeType: 'video/mp4',
    }),
    audio: file(
      'audio',
      '`audio/aac`, `audio/amr`, `audio/mpeg`, `audio/mp4` or `audio/ogg` (a voice note), at most 16 MB; no caption',
      { data: 'T2dnUwACAAAAAAAA...', mimeType: 'audio/ogg' },
    ),
    document: file(
      'document',
      '`application/pdf`, `text/plain` or an Office type, at most 100 MB (within the body limit of 24 MB)',
      {
        data: 'JVBERi0xLjQK...',
        mimeType: 'application/pdf',
        filename: 'invoice-1042.pdf',
      },
    ),
    sticker: file('sticker', '`image/webp`, at most 500 KB; no caption', {
      data: 'UklGRiQAAABXRUJQ...',
      mimeType: 'image/webp',
    }),
    location: Type.Optional(
      Type.Object(
        {
          latitude: Type.Number({ minimum: -90, maximum: 90 }),
          longitude: Type.Number({ minimum: -180, maximum: 180 }),
          name: Type.Optional(Type.String({ maxLength: 256 })),
          address: Type.Optional(Type.String({ maxLength: 1024 })),
        },
        {
          additionalProperties: false,
          description: 'A location the user shares.',
          examples: [{ latitude: 38.7223, longitude: -9.1393, name: 'Lisbon office' }],
        },
      ),
    ),
    buttonReply: Type.Optional(
      Type.Object(
        { id: Type.String({ minLength: 1, maxLength: 256 }), title: Type.String({ minLength: 1, maxLength: 20 }) },
        {
          additionalProperties: false,
          description: 'A tap on a reply button the agent sent.',
          examples: [{ id: 'refund', title: 'Refund' }],
        },
      ),
    ),
    listReply: Type.Optional(
      Type.Object(
        {
          id: Type.String({ minLength: 1, maxLength: 200 }),
          title: Type.String({ minLength: 1, maxLength: 24 }),
          description: Type.Optional(Type.String({ maxLength: 72 })),
        },
        {
          additionalProperties: false,
          description: 'A row the user picked from a list the agent sent.',
          examples: [{ id: 'slot-9', title: 'Tomorrow 9:00', description: 'Morning delivery' }],
        },
      ),
    ),
    reaction: Type.Optional(
      Type.Object(
        {
          messageId: Type.String({ minLength: 1, maxLength: 512, description: 'The message reacted to.' }),
          emoji: Type.String({ maxLength: 16, description: 'Empty: the reaction is taken back.' }),
        },
        {
          additionalProperties: false,
          description: 'A reaction to an earlier message.',
          examples: [{ messageId: 'wamid.HBgL...', emoji: '👍' }],
        },
      ),
    ),
    replyTo: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 512,
        description: "The provider's ID of the message this one replies to.",
      }),
    ),
  },
  { title: 'SandboxInboundRequest', additionalProperties: false },
);

/** Bodies of `POST /api/sandbox/inbound` may carry a file as base64: 16 MB of video is about 22 MB of text. */
export const SANDBOX_INBOUND_BODY_LIMIT = 24 * 1024 * 1024;

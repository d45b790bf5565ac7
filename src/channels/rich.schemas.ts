import { Type } from '@sinclair/typebox';

/**
 * What a free-form send may carry beside its text (at most one of `media`, `buttons`, `list`), and
 * a template's header file: the provider's limits, so a send that breaks one is refused before it
 * reaches the provider. The rules a schema cannot say (one of `id` or `link`, unique IDs, rows in
 * all, a section title when there are several) are checked by rich-checks.ts.
 */

/** Caption of a file, body of buttons or a list: the provider's limit. */
export const MAX_RICH_TEXT = 1024;
export const MAX_BUTTONS = 3;
export const MAX_BUTTON_ID = 256;
export const MAX_BUTTON_TITLE = 20;
export const MAX_LIST_BUTTON = 20;
export const MAX_SECTIONS = 10;
export const MAX_ROWS = 10;
export const MAX_ROW_ID = 200;
export const MAX_ROW_TITLE = 24;
export const MAX_ROW_DESCRIPTION = 72;
export const MAX_SECTION_TITLE = 24;
export const MAX_LINK = 2048;
export const MAX_FILENAME = 240;
/** A provider message ID (`wamid.`...). */
export const MAX_PROVIDER_MESSAGE_ID = 256;

export const OutboundMediaSchema = Type.Object(
  {
    id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: 'A file of `POST /api/media` (`med_...`), of this organization.',
      }),
    ),
    link: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: MAX_LINK,
        description: 'An http(s) address the provider fetches the file from.',
      }),
    ),
    kind: Type.Unsafe<'image' | 'video' | 'document'>({
      type: 'string',
      enum: ['image', 'video', 'document'],
      description: '`image` (JPEG, PNG), `video` (MP4, 3GPP) or `document` (PDF, Office, plain text).',
    }),
    filename: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: MAX_FILENAME,
        description: "A document's file name, as the user sees it.",
      }),
    ),
  },
  {
    title: 'OutboundMedia',
    additionalProperties: false,
    description: 'A file to send: exactly one of `id` or `link`.',
    examples: [{ id: 'med_4ZpQ8sKq2nLm6RtPz0XcVa', kind: 'image' }],
  },
);

export const ReplyButtonsSchema = Type.Array(
  Type.Object(
    {
      id: Type.String({
        minLength: 1,
        maxLength: MAX_BUTTON_ID,
        description: 'Comes back as `reply.id` when the user taps it; unique in the message.',
      }),
      title: Type.String({ minLength: 1, maxLength: MAX_BUTTON_TITLE, description: "The button's label." }),
    },
    { additionalProperties: false },
  ),
  {
    minItems: 1,
    maxItems: MAX_BUTTONS,
    description: `1 to ${MAX_BUTTONS} reply buttons under the text.`,
    examples: [
      [
        { id: 'refund', title: 'Refund' },
        { id: 'replace', title: 'Send a new one' },
      ],
    ],
  },
);

export const ListSchema = Type.Object(
  {
    button: Type.String({
      minLength: 1,
      maxLength: MAX_LIST_BUTTON,
      description: 'The label of the button that opens the list.',
    }),
    sections: Type.Array(
      Type.Object(
        {
          title: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: MAX_SECTION_TITLE,
              description: 'Required when there is more than one section.',
            }),
          ),
          rows: Type.Array(
            Type.Object(
              {
                id: Type.String({
                  minLength: 1,
                  maxLength: MAX_ROW_ID,
                  description: 'Comes back as `reply.id` when the user picks it; unique in the list.',
                }),
                title: Type.String({ minLength: 1, maxLength: MAX_ROW_TITLE }),
                description: Type.Optional(Type.String({ maxLength: MAX_ROW_DESCRIPTION })),
              },
              { additionalProperties: false },
            ),
            { minItems: 1, maxItems: MAX_ROWS },
          ),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: MAX_SECTIONS, description: `1 to ${MAX_SECTIONS} sections, ${MAX_ROWS} rows in all.` },
    ),
  },
  {
    title: 'ListMessage',
    additionalProperties: false,
    description: 'A list the user opens with `button` and picks one row of.',
    examples: [
      {
        button: 'Choose a slot',
        sections: [
          {
            title: 'Tomorrow',
            rows: [
              { id: 'slot-0900', title: '09:00', description: 'Morning, 1 hour' },
              { id: 'slot-1400', title: '14:00' },
            ],
          },
        ],
      },
    ],
  },
);

export const ReplyToSchema = Type.String({
  minLength: 1,
  maxLength: MAX_PROVIDER_MESSAGE_ID,
  description: "The provider's ID (`wamid.`...) of an earlier message of the conversation to quote.",
});

import { type Static, Type } from '@sinclair/typebox';

export const TemplateListQuery = Type.Object(
  {
    agent: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: "The agent whose number's templates to list; an agent key may omit it (its own agent).",
        examples: ['agt_4tV9sQ2mXc8Lr1Pz'],
      }),
    ),
  },
  { additionalProperties: false },
);
export type TemplateListQuery = Static<typeof TemplateListQuery>;

export const TemplateSchema = Type.Object({
  name: Type.String(),
  language: Type.String({ description: 'xx_XX, as approved.' }),
  category: Type.String({ description: 'MARKETING, UTILITY or AUTHENTICATION.' }),
  status: Type.String({
    description: 'APPROVED, PENDING, REJECTED, PAUSED or DISABLED (or another the provider gives).',
  }),
  header: Type.Union(
    [
      Type.Object({
        format: Type.String({ description: 'TEXT, IMAGE, VIDEO, DOCUMENT or LOCATION.' }),
        parameters: Type.Integer({ description: 'Parameters the header takes (a media header: 1, the file).' }),
      }),
      Type.Null(),
    ],
    { description: 'null: no header.' },
  ),
  bodyParameters: Type.Integer(),
  buttons: Type.Array(Type.Object({ type: Type.String(), text: Type.String() })),
  updatedAt: Type.Integer({ description: 'When Parley last saw it change, ms since epoch.' }),
});

export const TemplateList = Type.Object(
  {
    data: Type.Array(TemplateSchema),
    syncedAt: Type.Union([Type.Integer(), Type.Null()], {
      description: 'When the catalogue was last read from the provider; null: never (sends fall back to its answer).',
    }),
  },
  {
    title: 'TemplateList',
    examples: [
      {
        data: [
          {
            name: 'order_update',
            language: 'en_US',
            category: 'UTILITY',
            status: 'APPROVED',
            header: { format: 'TEXT', parameters: 1 },
            bodyParameters: 2,
            buttons: [],
            updatedAt: 1767225600000,
          },
        ],
        syncedAt: 1767225600000,
      },
    ],
  },
);
export type TemplateList = Static<typeof TemplateList>;

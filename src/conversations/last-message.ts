/** The newest message of a conversation either way, from the two joins that read it (list and inbox). */

export interface LastMessage {
  readonly direction: 'inbound' | 'outbound';
  readonly text: string;
  readonly at: number;
}

/** The columns a list's row carries for its newest outbound and inbound message. */
export interface LastMessageColumns {
  readonly out_type: 'template' | 'message' | null;
  readonly out_text: string | null;
  readonly out_template: string | null;
  readonly out_at: number | null;
  readonly in_type: string | null;
  readonly in_text: string | null;
  readonly in_at: number | null;
}

/** Its text (or what it was, for a template or a picture) and time; null for a conversation without messages. */
export function lastMessageOf(row: LastMessageColumns): LastMessage | null {
  const outbound =
    row.out_at === null
      ? null
      : {
          direction: 'outbound' as const,
          text: row.out_type === 'template' ? `Template ${row.out_template ?? ''}`.trim() : (row.out_text ?? ''),
          at: row.out_at,
        };
  const inbound =
    row.in_at === null
      ? null
      : {
          direction: 'inbound' as const,
          // A picture, a button...: what it was, since it has no text.
          text: row.in_text ?? (row.in_type ? `(${row.in_type})` : ''),
          at: row.in_at,
        };
  if (!outbound) return inbound;
  if (!inbound) return outbound;
  return inbound.at > outbound.at ? inbound : outbound;
}

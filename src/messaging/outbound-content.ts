/**
 * What a free-form send carries beside its text, and a template's header file, as Parley keeps
 * them and as the Cloud API takes them (image/video/document messages, interactive reply buttons
 * and lists, `context.message_id` to quote a message).
 */

export type OutboundMediaKind = 'image' | 'video' | 'document';

/** A file to send: by address (`link`, fetched by the provider) or one of Parley's (`id`). */
export interface OutboundMedia {
  readonly kind: OutboundMediaKind;
  /** Parley's media ID (`med_...`). */
  readonly id?: string;
  readonly link?: string;
  readonly filename?: string;
}

export interface ReplyButton {
  readonly id: string;
  readonly title: string;
}

export interface ListRow {
  readonly id: string;
  readonly title: string;
  readonly description?: string;
}

export interface ListSection {
  readonly title?: string;
  readonly rows: readonly ListRow[];
}

export interface ListMessage {
  readonly button: string;
  readonly sections: readonly ListSection[];
}

/** At most one of `media`, `buttons`, `list`; `replyTo` with any. What the history shows of a send. */
export interface OutboundContent {
  readonly media?: OutboundMedia;
  readonly buttons?: readonly ReplyButton[];
  readonly list?: ListMessage;
  readonly replyTo?: string;
  /** A template's header file. */
  readonly headerMedia?: OutboundMedia;
}

/** A file as the wire names it: the provider's media ID (of an uploaded file) or its address. */
export interface WireMedia {
  readonly kind: OutboundMediaKind;
  readonly providerMediaId?: string;
  readonly link?: string;
  readonly filename?: string;
}

/** A file's wire object (`{"id"}` or `{"link"}`, a document's `filename`, a caption). */
export function wireMediaObject(media: WireMedia, caption?: string): Record<string, unknown> {
  return {
    ...(media.providerMediaId !== undefined ? { id: media.providerMediaId } : { link: media.link }),
    ...(caption !== undefined ? { caption } : {}),
    ...(media.kind === 'document' && media.filename !== undefined ? { filename: media.filename } : {}),
  };
}

/** The part of a free-form send's wire body that says what it is: text, a file, buttons or a list. */
export function richWireBody(
  text: string,
  content: { readonly media?: WireMedia; readonly buttons?: readonly ReplyButton[]; readonly list?: ListMessage },
): Record<string, unknown> {
  if (content.media) return { type: content.media.kind, [content.media.kind]: wireMediaObject(content.media, text) };
  if (content.buttons) {
    return {
      type: 'interactive',
      interactive: {
        type: 'button',
        body: { text },
        action: { buttons: content.buttons.map((b) => ({ type: 'reply', reply: { id: b.id, title: b.title } })) },
      },
    };
  }
  if (content.list) {
    return {
      type: 'interactive',
      interactive: {
        type: 'list',
        body: { text },
        action: {
          button: content.list.button,
          sections: content.list.sections.map((s) => ({
            ...(s.title !== undefined ? { title: s.title } : {}),
            rows: s.rows.map((r) => ({
              id: r.id,
              title: r.title,
              ...(r.description !== undefined ? { description: r.description } : {}),
            })),
          })),
        },
      },
    };
  }
  return { type: 'text', text: { preview_url: false, body: text } };
}

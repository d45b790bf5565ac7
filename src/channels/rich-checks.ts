/**
 * The rules of a rich send the schema cannot say, each a 400 naming the field. Called only when a
 * send carries one of the new fields, so a plain send pays nothing for them.
 */
import type { ListMessage, OutboundContent, OutboundMedia, ReplyButton } from '../messaging/index.js';
import { clip } from '../shared/clip.js';
import { AppError } from '../shared/errors.js';
import { MAX_RICH_TEXT, MAX_ROWS } from './rich.schemas.js';

const invalid = (field: string, message: string) => new AppError('INVALID_BODY', message, { details: { field } });

/** Characters as the provider counts them: code points. */
const lengthOf = (text: string) => {
  let n = 0;
  for (const _ of text) n++;
  return n;
};

const blank = (field: string, value: string) => {
  if (!value.trim()) throw invalid(field, `'${field}' must not be blank.`);
};

/** A file to send: exactly one of `id` and `link`, an http(s) link, a file name for documents only. */
export function checkOutboundMedia(media: OutboundMedia, field: string): OutboundMedia {
  if ((media.id === undefined) === (media.link === undefined)) {
    throw invalid(
      field,
      `'${field}' needs exactly one of 'id' (a file of POST /api/media) and 'link' (an http(s) address).`,
    );
  }
  if (media.link !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(media.link);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || !url.hostname) {
      throw invalid(`${field}.link`, `'${field}.link' must be an http(s) address; got '${clip(media.link)}'.`);
    }
  }
  if (media.id !== undefined && !/^med_[A-Za-z0-9]{1,60}$/.test(media.id)) {
    throw invalid(
      `${field}.id`,
      `'${field}.id' must be a media ID of POST /api/media (med_...); got '${clip(media.id)}'.`,
    );
  }
  if (media.filename !== undefined) {
    if (media.kind !== 'document') {
      throw invalid(
        `${field}.filename`,
        `'${field}.filename' is for documents only; this file's kind is '${media.kind}'.`,
      );
    }
    blank(`${field}.filename`, media.filename);
  }
  return media;
}

function checkButtons(buttons: readonly ReplyButton[]): void {
  const seen = new Set<string>();
  for (const [i, b] of buttons.entries()) {
    blank(`message.buttons.${i}.id`, b.id);
    blank(`message.buttons.${i}.title`, b.title);
    if (seen.has(b.id)) {
      throw invalid(
        `message.buttons.${i}.id`,
        `'message.buttons.${i}.id' repeats '${clip(b.id)}': button IDs must be unique.`,
      );
    }
    seen.add(b.id);
  }
}

function checkList(list: ListMessage): void {
  blank('message.list.button', list.button);
  const rows = list.sections.reduce((n, s) => n + s.rows.length, 0);
  if (rows > MAX_ROWS) {
    throw invalid(
      'message.list.sections',
      `'message.list.sections' hold ${rows} rows in all; the most is ${MAX_ROWS}.`,
    );
  }
  const seen = new Set<string>();
  for (const [i, section] of list.sections.entries()) {
    const at = `message.list.sections.${i}`;
    if (section.title === undefined && list.sections.length > 1) {
      throw invalid(`${at}.title`, `'${at}.title' is required when a list has more than one section.`);
    }
    if (section.title !== undefined) blank(`${at}.title`, section.title);
    for (const [j, row] of section.rows.entries()) {
      blank(`${at}.rows.${j}.id`, row.id);
      blank(`${at}.rows.${j}.title`, row.title);
      if (seen.has(row.id)) {
        throw invalid(
          `${at}.rows.${j}.id`,
          `'${at}.rows.${j}.id' repeats '${clip(row.id)}': row IDs must be unique in the list.`,
        );
      }
      seen.add(row.id);
    }
  }
}

/** What a free-form send carries beside its text, checked; undefined when it carries nothing more. */
export function checkRichMessage(message: {
  readonly text: string;
  readonly media?: OutboundMedia;
  readonly buttons?: readonly ReplyButton[];
  readonly list?: ListMessage;
  readonly replyTo?: string;
}): OutboundContent | undefined {
  const { media, buttons, list, replyTo } = message;
  if (media === undefined && buttons === undefined && list === undefined && replyTo === undefined) return undefined;
  const parts = [media && 'media', buttons && 'buttons', list && 'list'].filter((p): p is string => Boolean(p));
  if (parts.length > 1) {
    throw invalid(
      `message.${parts[1]}`,
      `'message' takes at most one of 'media', 'buttons' and 'list'; this one has ${parts.map((p) => `'${p}'`).join(' and ')}.`,
    );
  }
  const [part] = parts;
  if (part !== undefined) {
    const length = lengthOf(message.text);
    if (length > MAX_RICH_TEXT) {
      throw invalid(
        'message.text',
        `'message.text' holds ${length} characters; with '${part}' (${part === 'media' ? 'its caption' : 'the body above it'}) the most is ${MAX_RICH_TEXT}.`,
      );
    }
  }
  if (media) checkOutboundMedia(media, 'message.media');
  if (buttons) checkButtons(buttons);
  if (list) checkList(list);
  if (replyTo !== undefined) blank('message.replyTo', replyTo);
  return {
    ...(media ? { media } : {}),
    ...(buttons ? { buttons } : {}),
    ...(list ? { list } : {}),
    ...(replyTo !== undefined ? { replyTo } : {}),
  };
}

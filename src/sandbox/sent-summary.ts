import { isObject } from './sandbox-wire.js';

const clipped = (text: string, max = 60) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
const str = (v: unknown) => (typeof v === 'string' ? v : '');

/** One line saying what a Cloud API request body asked for, for `parley sandbox sent`. */
export function summarizePayload(payload: Record<string, unknown>): string {
  if (payload.status === 'read') {
    return `read ${str(payload.message_id)}${isObject(payload.typing_indicator) ? ', typing' : ''}`;
  }
  const type = str(payload.type) || 'text';
  const part = payload[type];
  if (!isObject(part)) return type;
  switch (type) {
    case 'text':
      return `"${clipped(str(part.body))}"`;
    case 'template': {
      const language = isObject(part.language) ? str(part.language.code) : '';
      return `template ${str(part.name)} (${language})`;
    }
    case 'interactive': {
      const body = isObject(part.body) ? str(part.body.text) : '';
      const action = isObject(part.action) ? part.action : {};
      const buttons = Array.isArray(action.buttons)
        ? action.buttons.map((b) => (isObject(b) && isObject(b.reply) ? `[${str(b.reply.title)}]` : '')).join(' ')
        : '';
      const list = typeof action.button === 'string' ? `[${action.button} ▾]` : '';
      return `"${clipped(body)}" ${buttons || list}`.trim();
    }
    default: {
      const source = str(part.id) || str(part.link);
      const caption = str(part.caption);
      return `${type} ${source}${caption ? ` "${clipped(caption)}"` : ''}`;
    }
  }
}

import type { SandboxTemplate } from '../config.js';
import type { Clock } from '../shared/clock.js';
import { windowKey } from '../shared/phone.js';
import type { SandboxMediaStore } from './sandbox-media.js';
import { checkRichSend, isTextParameter } from './sandbox-rich.js';
import type { SandboxState } from './sandbox-state.js';
import { digits, isObject, type Json, type WireError } from './sandbox-wire.js';

export const BUILT_IN_TEMPLATES: readonly SandboxTemplate[] = [
  { name: 'hello_world', language: 'en_US', header: 0, body: 0 },
  { name: 'order_update', language: 'en_US', header: 1, body: 2 },
  // Its header is an image (sandbox-rich.ts): the one header parameter is the file.
  { name: 'promo_image', language: 'en_US', header: 1, body: 1 },
];

/** Recipients with a fixed answer, to exercise error paths. */
export const MAGIC_NUMBERS = {
  notOnApp: '+15005550001',
  throttled: '+15005550002',
  serverError: '+15005550003',
  /** 131056 (pair rate limit) when the previous send to it came less than PAIR_RATE_MS ago. */
  pairRate: '+15005550004',
} as const;

/** The sandbox's pair rate: one message per this many ms to the pair-rate magic number. */
export const PAIR_RATE_MS = 2_000;

const WINDOW_MS = 24 * 60 * 60 * 1000;

export interface SendCheckerOptions {
  readonly clock: Clock;
  /** Where the sandbox's 24-hour windows are kept. */
  readonly state: SandboxState;
  /** The templates the sandbox knows (the built-in ones and the configured ones). */
  readonly templates: readonly SandboxTemplate[];
  /** Sends per second per number accepted before answering 130429; unset: no limit. */
  readonly mps?: number | undefined;
  /** The files uploaded to the sandbox, which media sends may name. */
  readonly media: SandboxMediaStore;
}

/**
 * The provider's rules for one send, as the sandbox plays them: the magic recipients' fixed
 * answers, the pair rate and throughput limits, the 24-hour window for free text, and the known
 * templates with their parameter counts. The checker returns the wire error to answer, or the
 * recipient of an accepted send.
 */
export function sendChecker(
  options: SendCheckerOptions,
): (phoneNumberId: string, body: Json) => WireError | { to: string } {
  const { clock, state, templates } = options;
  /** Start times of the last second's accepted sends, per number (for `mps`). */
  const recentSends = new Map<string, number[]>();
  let lastPairSend = Number.NEGATIVE_INFINITY;
  const overThroughput = (phoneNumberId: string): boolean => {
    if (options.mps === undefined) return false;
    const now = Date.now();
    const times = (recentSends.get(phoneNumberId) ?? []).filter((t) => t > now - 1000);
    recentSends.set(phoneNumberId, times);
    if (times.length >= options.mps) return true;
    times.push(now);
    return false;
  };

  function checkSend(phoneNumberId: string, body: Json): WireError | { to: string } {
    if (body.messaging_product !== 'whatsapp') {
      return { status: 400, code: 100, message: 'Invalid parameter', details: 'messaging_product must be whatsapp' };
    }
    if (typeof body.to !== 'string' || digits(body.to).length < 7) {
      return { status: 400, code: 100, message: 'Invalid parameter', details: 'to must be a phone number' };
    }
    const to = `+${digits(body.to)}`;
    if (to === MAGIC_NUMBERS.notOnApp) {
      return {
        status: 400,
        code: 131026,
        message: 'Message undeliverable',
        details: 'The recipient is not a user of the messaging app.',
      };
    }
    if (to === MAGIC_NUMBERS.throttled) {
      return {
        status: 429,
        code: 130429,
        message: 'Rate limit hit',
        details: 'Cloud API message throughput has been reached.',
      };
    }
    if (to === MAGIC_NUMBERS.serverError) return { status: 500, code: 1, message: 'An unknown error occurred' };
    if (to === MAGIC_NUMBERS.pairRate) {
      const now = Date.now();
      if (now - lastPairSend < PAIR_RATE_MS) {
        return {
          status: 400,
          code: 131056,
          message: '(Business Account, Consumer Account) pair rate limit hit',
          details: 'Too many messages sent from this phone number to the same phone number in a short period of time.',
        };
      }
      lastPairSend = now;
    }
    if (overThroughput(phoneNumberId)) {
      return {
        status: 400,
        code: 130429,
        message: 'Rate limit hit',
        details: 'Cloud API message throughput has been reached.',
      };
    }
    const rich = checkRichSend(body, options.media);
    if (rich !== undefined && rich !== 'window') return rich;
    if (body.type === 'text' || rich === 'window') {
      const text = isObject(body.text) ? body.text.body : undefined;
      // The provider counts characters (code points), and refuses a body of blanks.
      if (body.type === 'text' && (typeof text !== 'string' || !text.trim() || [...text].length > 4096)) {
        return {
          status: 400,
          code: 131009,
          message: 'Parameter value is not valid',
          details: 'text.body: 1 to 4096 characters',
        };
      }
      const last = state.lastInbound(phoneNumberId, windowKey(to));
      if (last === undefined || clock.now() - last > WINDOW_MS) {
        return {
          status: 400,
          code: 131047,
          message: 'Re-engagement message',
          details:
            'Message failed to send because more than 24 hours have passed since the customer last replied to this number.',
        };
      }
      return { to };
    }
    if (body.type === 'template') {
      const t = isObject(body.template) ? body.template : {};
      const language = isObject(t.language) ? t.language.code : undefined;
      const known = templates.find((k) => k.name === t.name && k.language === language);
      if (!known) {
        return {
          status: 404,
          code: 132001,
          message: 'Template name does not exist in the translation',
          details: `template name (${String(t.name)}) does not exist in ${String(language)}`,
        };
      }
      const refused = statusRefusal(known, String(t.name), String(language));
      if (refused) return refused;
      const components = Array.isArray(t.components) ? t.components.filter(isObject) : [];
      const texts = components
        .flatMap((c) => (Array.isArray(c.parameters) ? c.parameters.filter(isObject) : []))
        .filter(isTextParameter);
      if (texts.some((p) => typeof p.text !== 'string' || !p.text.trim())) {
        return {
          status: 400,
          code: 131008,
          message: 'Required parameter is missing',
          details: 'a text parameter must not be empty',
        };
      }
      const count = (type: string) => {
        const c = components.find((x) => x.type === type);
        return Array.isArray(c?.parameters) ? c.parameters.length : 0;
      };
      for (const part of ['header', 'body'] as const) {
        if (count(part) !== known[part]) {
          return {
            status: 400,
            code: 132000,
            message: 'Number of parameters does not match the expected number of params',
            details: `${part}: number of localizable_params (${count(part)}) does not match the expected number of params (${known[part]})`,
          };
        }
      }
      return { to };
    }
    return {
      status: 400,
      code: 131009,
      message: 'Parameter value is not valid',
      details: 'type must be text or template',
    };
  }

  return checkSend;
}

/** The provider's answer to a template that exists but is not approved (sandbox-templates.ts keeps the status). */
function statusRefusal(
  known: SandboxTemplate & { status?: string },
  name: string,
  language: string,
): WireError | undefined {
  const status = known.status ?? 'APPROVED';
  if (status === 'APPROVED') return undefined;
  if (status === 'PAUSED') {
    return {
      status: 400,
      code: 132015,
      message: 'Template is Paused',
      details: `template ${name} (${language}) is paused`,
    };
  }
  if (status === 'DISABLED') {
    return {
      status: 400,
      code: 132016,
      message: 'Template is Disabled',
      details: `template ${name} (${language}) is disabled`,
    };
  }
  return {
    status: 404,
    code: 132001,
    message: 'Template name does not exist in the translation',
    details: `template ${name} (${language}) is ${status.toLowerCase()}, not approved`,
  };
}

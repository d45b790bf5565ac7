import { existsSync } from 'node:fs';
import SQLite from 'better-sqlite3';

/**
 * The sandbox's log of what it was sent: every request on a number's messages endpoint (sends and
 * read receipts, accepted or refused), with the exact body it received, so a bot developer (and a
 * test) sees exactly what went out. It is a sandbox's log, not an archive: only the last
 * SENT_LOG_BOUND requests of each sending number are kept.
 */

/** How many requests wait in memory while the file refuses writes (the oldest are dropped past it). */
const MAX_PENDING = 10_000;
/** How long a refused batch waits before it is written again. */
const RETRY_MS = 1000;

/** How many requests the log keeps per sending number (the oldest go first). */
export const SENT_LOG_BOUND = 1000;

export interface SentEntry {
  /** The provider message ID the sandbox gave an accepted send; for a read receipt, the message read; null when refused. */
  readonly messageId: string | null;
  /** The sending number's provider ID (the path's phone number ID). */
  readonly phoneNumberId: string;
  /** The recipient, E.164 (`+` and digits); null when the body names none the sandbox knows. */
  readonly to: string | null;
  /** The body's `type` (text, template, image, interactive...), or `read` for a read receipt. */
  readonly type: string;
  /** The request body exactly as received (JSON text). */
  readonly payload: string;
  readonly receivedAt: number;
  /** The provider error the sandbox answered with, or null when it accepted the request. */
  readonly error: { readonly code: number; readonly message: string } | null;
}

export interface SentQuery {
  /** The sending numbers whose requests are wanted (an organization's); none: nothing. */
  readonly phoneNumberIds: readonly string[];
  /** Only requests to this recipient (E.164). */
  readonly to?: string | undefined;
  readonly limit: number;
}

export interface SentLog {
  record(entry: SentEntry): void;
  /** Newest first. */
  list(query: SentQuery): SentEntry[];
  /** Writes what is still pending (the file log writes once per turn of the event loop). */
  flush(): void;
}

export function memorySentLog(bound = SENT_LOG_BOUND): SentLog {
  const byNumber = new Map<string, SentEntry[]>();
  return {
    record(entry) {
      const entries = byNumber.get(entry.phoneNumberId) ?? [];
      entries.push(entry);
      if (entries.length > bound) entries.splice(0, entries.length - bound);
      byNumber.set(entry.phoneNumberId, entries);
    },
    list({ phoneNumberIds, to, limit }) {
      const ids = new Set(phoneNumberIds);
      const all = [...byNumber.entries()].filter(([id]) => ids.has(id)).flatMap(([, entries]) => entries);
      // Entries of one number are in order; across numbers, by time (a stable sort keeps each number's order).
      const newest = all
        .map((entry, i) => ({ entry, i }))
        .sort((a, b) => b.entry.receivedAt - a.entry.receivedAt || b.i - a.i)
        .map(({ entry }) => entry);
      return newest.filter((e) => to === undefined || e.to === to).slice(0, limit);
    },
    flush() {},
  };
}

interface SentRow {
  message_id: string | null;
  phone_number_id: string;
  to_phone: string | null;
  type: string;
  payload: string;
  received_at: number;
  error_code: number | null;
  error_message: string | null;
}

const toEntry = (row: SentRow): SentEntry => ({
  messageId: row.message_id,
  phoneNumberId: row.phone_number_id,
  to: row.to_phone,
  type: row.type,
  payload: row.payload,
  receivedAt: row.received_at,
  error: row.error_code === null ? null : { code: row.error_code, message: row.error_message ?? '' },
});

const SELECT = `select message_id, phone_number_id, to_phone, type, payload, received_at, error_code, error_message
  from sandbox_sent
  where phone_number_id in (select value from json_each(?)) and (? is null or to_phone = ?)
  order by seq desc limit ?`;

function listRows(db: SQLite.Database, { phoneNumberIds, to, limit }: SentQuery): SentEntry[] {
  if (phoneNumberIds.length === 0) return [];
  const rows = db.prepare(SELECT).all(JSON.stringify(phoneNumberIds), to ?? null, to ?? null, limit) as SentRow[];
  return rows.map(toEntry);
}

/**
 * The log in the sandbox's state file (shared by every sandbox of a data folder). Requests are
 * written in one transaction per turn of the event loop, so that a busy sandbox pays one commit per
 * batch rather than per send; `list` writes what is pending first.
 */
export function fileSentLog(
  db: SQLite.Database,
  bound = SENT_LOG_BOUND,
  onError: (err: unknown) => void = () => {},
): SentLog {
  db.exec(`
    create table if not exists sandbox_sent (
      seq integer primary key autoincrement, phone_number_id text not null, message_id text,
      to_phone text, type text not null, payload text not null, received_at integer not null,
      error_code integer, error_message text);
    create index if not exists sandbox_sent_by_number on sandbox_sent (phone_number_id, seq);`);
  const insert = db.prepare(
    `insert into sandbox_sent (phone_number_id, message_id, to_phone, type, payload, received_at, error_code, error_message)
     values (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  // Everything of the number older than its newest `bound` requests.
  const prune = db.prepare(
    `delete from sandbox_sent where phone_number_id = ? and seq <= (
       select seq from sandbox_sent where phone_number_id = ? order by seq desc limit 1 offset ?)`,
  );
  let pending: SentEntry[] = [];
  let scheduled = false;
  const write = db.transaction((entries: readonly SentEntry[]) => {
    const numbers = new Set<string>();
    for (const e of entries) {
      insert.run(
        e.phoneNumberId,
        e.messageId,
        e.to,
        e.type,
        e.payload,
        e.receivedAt,
        e.error?.code ?? null,
        e.error?.message ?? null,
      );
      numbers.add(e.phoneNumberId);
    }
    for (const id of numbers) prune.run(id, id, bound);
  });
  let retrying = false;
  const flush = () => {
    scheduled = false;
    if (pending.length === 0) return;
    const entries = pending;
    pending = [];
    try {
      write(entries);
    } catch (err) {
      // A full disk (SQLITE_FULL) or a busy file: the batch waits for a later turn, bounded, rather
      // than the error escaping a timer and ending the process that hosts the sandbox.
      pending = [...entries, ...pending].slice(-MAX_PENDING);
      onError(err);
      if (!retrying) {
        retrying = true;
        setTimeout(() => {
          retrying = false;
          flush();
        }, RETRY_MS).unref();
      }
    }
  };
  return {
    record(entry) {
      pending.push(entry);
      if (scheduled) return;
      scheduled = true;
      setImmediate(flush);
    },
    list(query) {
      flush();
      return listRows(db, query);
    },
    flush,
  };
}

/**
 * Reads the log of a state file from another process (the CLI) without writing to it; an absent
 * file (no sandbox ever ran in that data folder) is an empty log.
 */
export function readSentLogFile(file: string, query: SentQuery): SentEntry[] {
  if (!existsSync(file)) return [];
  const db = new SQLite(file, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    const table = db.prepare("select 1 from sqlite_master where type = 'table' and name = 'sandbox_sent'").get();
    return table ? listRows(db, query) : [];
  } finally {
    db.close();
  }
}

/** The log entry of one request on a number's messages endpoint, from its body and the sandbox's answer. */
export function sentEntryOf(
  phoneNumberId: string,
  payload: string,
  body: Record<string, unknown>,
  receivedAt: number,
  outcome: { messageId: string } | { error: { code: number; message: string } },
): SentEntry {
  const read = body.status === 'read';
  const recipient = typeof body.to === 'string' ? body.to.replace(/\D/g, '') : '';
  return {
    messageId: 'messageId' in outcome ? outcome.messageId : null,
    phoneNumberId,
    to: recipient ? `+${recipient}` : null,
    type: read ? 'read' : typeof body.type === 'string' ? body.type.slice(0, 64) : 'text',
    payload,
    receivedAt,
    error: 'error' in outcome ? { code: outcome.error.code, message: outcome.error.message } : null,
  };
}

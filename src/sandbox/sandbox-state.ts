import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import { ensurePrivateDir, ensurePrivateFile, SQLITE_COMPANIONS } from '../shared/private-files.js';
import { fileSentLog, memorySentLog, type SentLog } from './sandbox-sent-log.js';

/** The sandbox's memory: what a real provider keeps on its side. */
export interface SandboxState {
  openWindow(phoneNumberId: string, userKey: string, at: number): void;
  lastInbound(phoneNumberId: string, userKey: string): number | undefined;
  setDisplayNumber(phoneNumberId: string, display: string): void;
  displayNumber(phoneNumberId: string): string | undefined;
  /** What the sandbox was sent (sandbox-sent-log.ts). */
  readonly sent: SentLog;
  close(): void;
}

export function memoryState(): SandboxState {
  const windows = new Map<string, number>();
  const displays = new Map<string, string>();
  return {
    openWindow: (id, key, at) => windows.set(`${id}:${key}`, Math.max(at, windows.get(`${id}:${key}`) ?? at)),
    lastInbound: (id, key) => windows.get(`${id}:${key}`),
    setDisplayNumber: (id, display) => displays.set(id, display),
    displayNumber: (id) => displays.get(id),
    sent: memorySentLog(),
    close: () => {},
  };
}

/** State in a SQLite file: survives restarts, and several processes (WAL) share it. */
export function fileState(file: string, onLogError?: (err: unknown) => void): SandboxState {
  ensurePrivateDir(dirname(file));
  ensurePrivateFile(file, SQLITE_COMPANIONS);
  const db = new SQLite(file);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  // A sandbox's memory: a commit need not wait for the disk (WAL keeps it whole after a crash of
  // the process; only a power cut may lose its last moments).
  db.pragma('synchronous = NORMAL');
  db.exec(`
    create table if not exists sandbox_windows (
      phone_number_id text not null, user_key text not null, last_inbound_at integer not null,
      primary key (phone_number_id, user_key));
    create table if not exists sandbox_numbers (phone_number_id text primary key, display text not null);`);
  const upsertWindow = db.prepare(
    `insert into sandbox_windows (phone_number_id, user_key, last_inbound_at) values (?, ?, ?)
     on conflict (phone_number_id, user_key) do update
     set last_inbound_at = max(last_inbound_at, excluded.last_inbound_at)`,
  );
  const selectWindow = db.prepare(
    'select last_inbound_at as at from sandbox_windows where phone_number_id = ? and user_key = ?',
  );
  const upsertNumber = db.prepare(
    'insert into sandbox_numbers (phone_number_id, display) values (?, ?) on conflict (phone_number_id) do update set display = excluded.display',
  );
  const selectNumber = db.prepare('select display from sandbox_numbers where phone_number_id = ?');
  const sent = fileSentLog(db, undefined, onLogError);
  return {
    openWindow: (id, key, at) => void upsertWindow.run(id, key, at),
    lastInbound: (id, key) => (selectWindow.get(id, key) as { at: number } | undefined)?.at,
    setDisplayNumber: (id, display) => void upsertNumber.run(id, display),
    displayNumber: (id) => (selectNumber.get(id) as { display: string } | undefined)?.display,
    sent,
    close: () => {
      sent.flush();
      db.close();
    },
  };
}

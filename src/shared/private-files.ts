import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';

/**
 * The data folder holds password hashes, sealed secrets and session hashes: a folder Parley makes
 * is 0700 and its files 0600, readable by the server's own user only (docs/security.md).
 */
export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Makes a folder (and any missing parents) readable by this user only; an existing folder is left as the operator set it. */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/**
 * Makes sure a file exists with mode 0600 before another library opens it (SQLite gives its WAL
 * and shared-memory files the mode of the database file), and tightens an older file to 0600.
 */
export function ensurePrivateFile(file: string, companions: readonly string[] = []): void {
  if (!existsSync(file)) closeSync(openSync(file, 'a', PRIVATE_FILE_MODE));
  chmodSync(file, PRIVATE_FILE_MODE);
  // Left by an older version (a WAL kept after an unclean stop): tightened too.
  for (const suffix of companions) if (existsSync(file + suffix)) chmodSync(file + suffix, PRIVATE_FILE_MODE);
}

/** The files SQLite keeps beside a database in WAL mode. */
export const SQLITE_COMPANIONS = ['-wal', '-shm'] as const;

import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';

/**
 * The data folder holds password hashes, sealed secrets and session hashes: the folder Parley makes
 * is 0700, the database, its WAL and shared memory, and the generated secret key are 0600, whatever
 * the process's umask allows.
 */
describe('the data folder is private to the server user (sqlite)', () => {
  const parent = mkdtempSync(join(tmpdir(), 'parley-modes-'));
  const dataDir = join(parent, 'fresh', 'data');
  let t: TestApp;
  let umask: number;

  beforeAll(async () => {
    umask = process.umask(0o022);
    t = await createTestApp('sqlite', { env: { PARLEY_DATA_DIR: dataDir } });
    // A write, so that the WAL and its shared memory exist.
    await makeTenant(t.ctx);
  });
  afterAll(async () => {
    await t.close();
    process.umask(umask);
    rmSync(parent, { recursive: true, force: true });
  });

  const mode = (path: string) => statSync(path).mode & 0o777;

  it('makes the folder 0700 and every file in it 0600', () => {
    expect(mode(dataDir).toString(8)).toBe('700');
    const files = readdirSync(dataDir).filter((name) => statSync(join(dataDir, name)).isFile());
    expect(files).toEqual(
      expect.arrayContaining(['parley-us.db', 'parley-us.db-wal', 'parley-us.db-shm', 'secret.key']),
    );
    for (const name of files) expect(`${name} ${mode(join(dataDir, name)).toString(8)}`).toBe(`${name} 600`);
  });
});

import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createSecretBox } from '../../src/numbers/secret-box.js';

describe('the secret box (AES-256-GCM)', () => {
  const box = createSecretBox(randomBytes(32));

  it('opens what it sealed', () => {
    expect(box.open(box.seal('EAAG-token'))).toBe('EAAG-token');
  });

  it('refuses a sealed secret whose authentication tag was cut short, or altered', () => {
    const [version, iv, tag, data] = box.seal('EAAG-token').split('.') as [string, string, string, string];
    const tagBytes = Buffer.from(tag, 'base64url');
    for (const length of [4, 8, 12, 15]) {
      const cut = [version, iv, tagBytes.subarray(0, length).toString('base64url'), data].join('.');
      expect(() => box.open(cut), `a ${length}-byte tag`).toThrow(/truncated authentication tag/);
    }
    const altered = Buffer.from(tagBytes);
    altered[0] = (altered[0] ?? 0) ^ 1;
    expect(() => box.open([version, iv, altered.toString('base64url'), data].join('.'))).toThrow();
  });
});

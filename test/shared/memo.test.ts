import { describe, expect, it } from 'vitest';
import { memoize } from '../../src/shared/memo.js';
import { endUserPhoneOf, parseInternationalPhone } from '../../src/shared/phone.js';

describe('memoize', () => {
  it('calls the function once per input while it remembers, undefined results included, and starts over when full', () => {
    const calls: string[] = [];
    const f = memoize((s: string) => {
      calls.push(s);
      return s === 'none' ? undefined : s.length;
    }, 3);
    expect([f('a'), f('bb'), f('a'), f('none'), f('none'), f('bb')]).toEqual([1, 2, 1, undefined, undefined, 2]);
    expect(calls).toEqual(['a', 'bb', 'none']);
    f('dddd'); // the fourth input: memory starts over with it
    f('a');
    expect(calls).toEqual(['a', 'bb', 'none', 'dddd', 'a']);
  });

  it('the remembered phone parsers answer as before, every time', () => {
    for (let i = 0; i < 3; i++) {
      expect(parseInternationalPhone('+1 (650) 555-0123')).toEqual({ ok: true, e164: '+16505550123' });
      expect(parseInternationalPhone('+1 650 555 0123 ext. 5')).toEqual({ ok: false, problem: 'extension' });
      expect(parseInternationalPhone('+999')).toEqual({ ok: false, problem: 'invalid' });
      expect(endUserPhoneOf('+5511912345678')).toBe('+5511912345678');
      expect(endUserPhoneOf('+15')).toBeUndefined();
    }
  });
});

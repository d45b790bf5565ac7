import { describe, expect, it } from 'vitest';
import { cleanFilename, inboundKindOf, sha256Hex } from '../../src/messaging/inbound-kinds.js';

/** The parsing of each inbound kind: what is kept, and how odd values are bounded (no app needed). */
describe('inbound message kinds', () => {
  const hex = 'ab'.repeat(32);

  it('keeps each kind with what it carries', () => {
    expect(inboundKindOf({ type: 'text', text: { body: 'hi' }, context: { from: '1', id: 'wamid.A' } })).toEqual({
      type: 'text',
      text: 'hi',
      replyTo: 'wamid.A',
      content: {},
      media: undefined,
    });
    expect(
      inboundKindOf({
        type: 'document',
        document: {
          id: '123',
          mime_type: 'Application/PDF; charset=x',
          sha256: hex,
          caption: 'Invoice',
          filename: '../../etc/passwd',
        },
      }),
    ).toEqual({
      type: 'document',
      text: 'Invoice',
      replyTo: null,
      content: {},
      media: { providerMediaId: '123', mimeType: 'application/pdf', sha256: hex, filename: 'passwd' },
    });
    expect(inboundKindOf({ type: 'audio', audio: { id: '9', mime_type: 'audio/ogg', voice: true } })).toMatchObject({
      type: 'audio',
      text: null,
      content: { voice: true },
      media: { providerMediaId: '9', sha256: null, filename: null },
    });
    expect(
      inboundKindOf({ type: 'location', location: { latitude: '38.72', longitude: -9.14, name: 'Office' } }).content,
    ).toEqual({
      location: { latitude: 38.72, longitude: -9.14, name: 'Office' },
    });
    expect(
      inboundKindOf({
        type: 'interactive',
        interactive: { type: 'list_reply', list_reply: { id: 'r1', title: 'Row', description: 'D' } },
      }).content,
    ).toEqual({ reply: { kind: 'list', id: 'r1', title: 'Row', description: 'D' } });
    expect(inboundKindOf({ type: 'button', button: { payload: 'stop', text: 'Stop promotions' } }).content).toEqual({
      reply: { kind: 'button', id: 'stop', title: 'Stop promotions' },
    });
    expect(inboundKindOf({ type: 'reaction', reaction: { message_id: 'wamid.B', emoji: '' } }).content).toEqual({
      reaction: { messageId: 'wamid.B', emoji: '' },
    });
  });

  it('keeps anything else as unsupported, and a malformed part of a known kind as far as it goes', () => {
    expect(inboundKindOf({ type: 'order', order: {} })).toMatchObject({ type: 'unsupported', text: null, content: {} });
    expect(inboundKindOf({ type: 'system' }).type).toBe('unsupported');
    expect(inboundKindOf({}).type).toBe('text');
    // Out of range, not numbers: no location, the message kept.
    expect(inboundKindOf({ type: 'location', location: { latitude: 91, longitude: 0 } })).toMatchObject({
      type: 'location',
      content: {},
    });
    expect(inboundKindOf({ type: 'location', location: { latitude: 'north', longitude: 0 } }).content).toEqual({});
    // A file without an ID: the message without its file.
    expect(inboundKindOf({ type: 'image', image: { mime_type: 'image/jpeg' } }).media).toBeUndefined();
    // An interactive reply of an unknown type, a reaction without a message.
    expect(inboundKindOf({ type: 'interactive', interactive: { type: 'nfm_reply' } }).content).toEqual({});
    expect(inboundKindOf({ type: 'reaction', reaction: { emoji: '👍' } }).content).toEqual({});
  });

  it('bounds and cleans every value: NULs, lengths, types, names, hashes', () => {
    const long = 'x'.repeat(100_000);
    const parsed = inboundKindOf({
      type: 'image',
      image: { id: '1', mime_type: '<script>', sha256: 'not a hash', caption: `a\u0000b${long}` },
    });
    expect(parsed.text?.startsWith('ab')).toBe(true);
    expect(parsed.text?.length).toBe(4096);
    expect(parsed.media).toEqual({
      providerMediaId: '1',
      mimeType: 'application/octet-stream',
      sha256: null,
      filename: null,
    });
    expect(inboundKindOf({ type: 'text', text: { body: long } }).text?.length).toBe(65_536);
    expect(inboundKindOf({ type: 'text', context: { id: 'x'.repeat(600) } }).replyTo).toBeNull();
    const contacts = inboundKindOf({
      type: 'contacts',
      contacts: Array.from({ length: 50 }, () => ({
        name: { first_name: 'A', last_name: 'B' },
        phones: [{ phone: '+1 650' }, 'junk'],
      })),
    }).content.contacts;
    expect(contacts).toHaveLength(20);
    expect(contacts?.[0]).toEqual({ name: 'A B', phones: [{ phone: '+1 650' }], emails: [] });
    expect(sha256Hex(Buffer.from(hex, 'hex').toString('base64'))).toBe(hex);
    expect(sha256Hex(hex.toUpperCase())).toBe(hex);
    expect(cleanFilename('a\u0001b\\c/d.pdf')).toBe('d.pdf');
    expect(cleanFilename('   ')).toBeUndefined();
  });
});

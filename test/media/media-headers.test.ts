import { describe, expect, it } from 'vitest';
import { type Media, mediaHeaders } from '../../src/media/index.js';

const media = (mimeType: string, filename: string | null = null): Media => ({
  id: 'med_x',
  orgId: 'org_x',
  source: 'upload',
  state: 'stored',
  mimeType,
  size: 10,
  sha256: 'ab'.repeat(32),
  filename,
  store: 'folder',
  storageKey: 'org_x/med_x',
  providerMediaId: null,
  numberId: null,
  agentId: null,
  unavailableReason: null,
  createdAt: 0,
  storedAt: 0,
  deletedAt: null,
});

/** How a file is served: raster images inline, everything else (SVG and HTML included) a download. */
describe('the headers a file is served with', () => {
  it('shows raster images inline, never SVG or HTML', () => {
    expect(mediaHeaders(media('image/png'), 10)).toEqual({
      'content-type': 'image/png',
      'content-length': '10',
      etag: `"${'ab'.repeat(32)}"`,
      'x-content-type-options': 'nosniff',
      'content-disposition': 'inline; filename="med_x.png"',
    });
    for (const type of ['image/svg+xml', 'text/html', 'application/xhtml+xml', 'application/pdf']) {
      expect(mediaHeaders(media(type, 'page.html'), 10)['content-disposition'], type).toBe(
        `attachment; filename="page.html"; filename*=UTF-8''page.html`,
      );
    }
  });

  it('quotes a name safely, and gives the exact one as filename*', () => {
    expect(mediaHeaders(media('application/pdf', 'ré"sumé\\.pdf'), 1)['content-disposition']).toBe(
      `attachment; filename="r__sum__.pdf"; filename*=UTF-8''${encodeURIComponent('ré"sumé\\.pdf')}`,
    );
  });
});

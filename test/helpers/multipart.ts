import { randomBytes } from 'node:crypto';

/** A multipart/form-data body with one file part (and any plain fields), as a browser or curl sends it. */
export function multipartBody(
  file: { field?: string; bytes: Buffer; type?: string; filename?: string },
  fields: Record<string, string> = {},
): { body: Buffer; headers: Record<string, string> } {
  const boundary = `----test${randomBytes(8).toString('hex')}`;
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  parts.push(
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${file.field ?? 'file'}"; filename="${file.filename ?? 'file'}"\r\n` +
        (file.type !== undefined ? `Content-Type: ${file.type}\r\n` : '') +
        '\r\n',
    ),
    file.bytes,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  );
  return { body: Buffer.concat(parts), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

/** The smallest PDF a sniffer takes for one. */
export const pdfBytes = (extra = 0) =>
  Buffer.concat([
    Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n'),
    Buffer.alloc(extra, 0x20),
    Buffer.from('%%EOF\n'),
  ]);

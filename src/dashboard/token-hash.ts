import { createHash } from 'node:crypto';

/** How a dashboard token (a session's, an invitation's) is stored: its SHA-256, never the token. */
export const tokenHash = (token: string): string => createHash('sha256').update(token).digest('hex');

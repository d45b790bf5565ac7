/**
 * The numbers feature's public surface beyond its service (`number.service.ts`): the sealing of
 * provider access tokens at rest and the webhook app secret, both kept in the data folder when not
 * configured.
 */
export * from './secret-box.js';

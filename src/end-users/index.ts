/** End users' public surface for other features: the service's verbs, and the reads others build on. */

export { normalizePhone } from '../shared/phone.js';
export { findEndUserById, findEndUserByIdWithKeyEpoch } from './end-user.fast.js';
export { ATTRIBUTE_KEY, type EndUser } from './end-user.model.js';
export { toEndUser } from './end-user.repository.js';
export * from './end-user.service.js';
export { deleteEndUserMadeForSend, type EndUserFields, findOrCreateEndUserByPhone } from './end-user-by-phone.js';
export { normalizeEmail, searchKey } from './normalize.js';

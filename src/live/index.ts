/** Live updates of the inbox: changes published by whoever makes them, heard by every node's open pages. */
export type { LiveChange, LiveKind } from './live.model.js';
export { publishLive } from './live.service.js';
export { LiveHub, type LiveListener } from './live-hub.js';

/**
 * Everything the benchmarks take from inside Parley, in one file. Otherwise a benchmark uses only
 * what a user of the package could: the built CLI (`dist/cli/main.js`, as `npm start` runs it, and
 * `parley sandbox`), HTTP, and the `@parley/client` package. Three kinds of benchmark code need more:
 *
 * - the reference servers (`ceiling-server.ts`, `send-reference-server.ts`), whose point is to do
 *   exactly Parley's own work for one route (its statements, its records, its headers) without its
 *   framework, so they call Parley's data layer itself;
 * - the seeds and checks (`seed-endusers.ts`, `send.ts`), which write a million end users or count a
 *   run's stored statuses straight in the database, far faster than through the API;
 * - `job-runners.ts`, which compares job-runner engines under Parley's own runner.
 *
 * When a module below moves, fix its path here and nowhere else. Each export says why it is needed.
 */

// audiences.ts: a segment send run in-process (its members turned into deliveries, the job runner stubbed),
// and the analytics reads timed directly, on seeded rows.
export { createAgent } from '../src/agents/agent.service.js';
export { campaignStats, orgOverview } from '../src/analytics/analytics.service.js';
// The key check of the reference servers: a bearer key's hash, as Parley's auth hook computes it.
export { keyHashOf } from '../src/auth/auth.js';
export { createCampaign } from '../src/campaigns/campaign.service.js';
export { scheduleSegmentSend } from '../src/campaigns/segment-send.service.js';
export { SegmentSender } from '../src/campaigns/segment-send.task.js';
// The send reference's message row and its acceptance statement, the same as Parley's send.
export { messageRow, recordAcceptance } from '../src/channels/send-from-agent.js';
// Configuration: the reference servers and seeds open the database `parley serve` would, from the same environment.
export { loadConfig } from '../src/config.js';
export { ConversationSchema } from '../src/conversations/conversation.schemas.js';
export { toConversation } from '../src/conversations/conversation.service.js';
// The conversation read of the reference server: the row with the key epoch, the record, and the route's schema.
// findRecipientStoringMessage: the send reference's one statement that reads the recipient and stores the message.
export { findConversationWithKeyEpoch, findRecipientStoringMessage } from '../src/conversations/index.js';
// The database: open it as Parley does, migrate it, run a raw statement (seeds, counts), drop a run's PostgreSQL schema.
export { dropPostgresSchema, migrateToLatest, openDatabase, sql } from '../src/db/database.js';
export { EndUserSchema } from '../src/end-users/end-user.schemas.js';
export type { EndUserTable } from '../src/end-users/end-user.table.js';
// The end-user read of the reference server: the row with the key epoch, the record, and the route's schema.
export { findEndUserByIdWithKeyEpoch, toEndUser } from '../src/end-users/index.js';
export { searchKey } from '../src/end-users/normalize.js';
// The security headers Parley sends on every answer, sent by the reference servers too so they answer alike.
export { SECURITY_HEADERS } from '../src/http/security-headers.js';
// job-runners.ts: Parley's own job runner, measured beside pg-boss and graphile-worker.
export { createJobRunner } from '../src/jobs/jobs.js';
// Seeding end users: an organization and a key made as `parley` makes them, and each name's search form.
export { createKey } from '../src/keys/key.service.js';
// The message read of the reference server: the row and its statuses with the key epoch, the answer and its schema.
// applyPendingStatuses: the reference server for sends applies the statuses that outran a message, as Parley does.
export { applyPendingStatuses, findMessageWithKeyEpoch } from '../src/messaging/index.js';
export { MessageResponse, toMessageResponse } from '../src/messaging/message.service.js';
// The send reference calls the provider with Parley's own client, so the request is the same.
export { createCloudProvider } from '../src/messaging/provider.js';
export { createOrganization } from '../src/orgs/org.service.js';
// inbound-media.ts runs the provider sandbox in its own process: it keeps the files there and posts their
// webhooks itself, so that its clock starts when the provider's webhook leaves.
export { providerJson, signBody, startSandbox } from '../src/sandbox/index.js';
export { createSegment } from '../src/segments/segment.service.js';
// The clock and IDs Parley stamps its rows with, so seeded rows look like the API's own.
export { systemClock } from '../src/shared/clock.js';
export { newId } from '../src/shared/ids.js';
// Ports for child servers outside the ephemeral range, never handed out twice in a run (shared with the CLI tests).
export { freePort } from '../test/helpers/cli.js';

/**
 * The finishing of /api/openapi.json, in one place: an `operationId` for every operation (so a
 * generated client has methods named for what they do), the top-level tags, the license, and named
 * component schemas: every schema a route declares with a `title` (EndUser, ChannelSendRequest,
 * Conversation...) is moved to `components.schemas` under that title and referenced from where it
 * was, so a generated client has those types; and an example of each (openapi-examples.ts).
 */

import { SCHEMA_EXAMPLES } from './openapi-examples.js';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The license of the API description (the package's own). */
export const API_LICENSE = { name: 'UNLICENSED (proprietary; see the repository)' };

/** Operation IDs by method and path: stable names a client generator turns into methods. */
export const OPERATION_IDS: Readonly<Record<string, string>> = {
  'GET /api/health': 'getHealth',
  'GET /api/media/{mediaId}': 'downloadMedia',
  'POST /api/media': 'uploadMedia',
  'GET /api/openapi.json': 'getOpenApiDocument',
  'GET /api/ready': 'getReadiness',
  'GET /api/endusers': 'listEndUsers',
  'POST /api/endusers': 'createEndUser',
  'POST /api/endusers/batch': 'batchCreateEndUsers',
  'GET /api/endusers/{endUserId}': 'getEndUser',
  'PATCH /api/endusers/{endUserId}': 'updateEndUser',
  'DELETE /api/endusers/{endUserId}': 'deleteEndUser',
  'POST /api/channels/send': 'sendChannelMessage',
  'GET /api/messages/{messageId}': 'getMessage',
  'POST /api/messages/{messageId}/read': 'markMessageRead',
  'POST /api/triggers/{agentId}/{triggerId}': 'startTrigger',
  'GET /api/conversations': 'listConversations',
  'GET /api/conversations/{conversationId}': 'getConversation',
  'GET /api/conversations/{conversationId}/messages': 'listConversationMessages',
  'POST /api/conversations/{conversationId}/close': 'closeConversation',
  'POST /api/conversations/{conversationId}/handoff': 'handOffConversation',
  'POST /api/conversations/{conversationId}/release': 'releaseConversation',
  'POST /api/campaigns/{campaignId}/webhook': 'postCampaignRecipients',
  'GET /api/campaigns/{campaignId}': 'getCampaign',
  'GET /api/campaigns/{campaignId}/deliveries': 'listCampaignDeliveries',
  'GET /webhooks/msgapp': 'verifyProviderWebhook',
  'POST /webhooks/msgapp': 'receiveProviderWebhook',
  'POST /api/sandbox/inbound': 'simulateInboundMessage',
  'GET /api/sandbox/messages': 'listSandboxSentMessages',
};

export const TAGS: readonly { name: string; description: string }[] = [
  { name: 'public', description: 'Health, readiness and this document: no key needed.' },
  { name: 'end users', description: 'End-user records of the organization (permission End-users, organization keys).' },
  {
    name: 'segments',
    description: 'Saved filters of end users, their counts and members (permission End-users, organization keys).',
  },
  { name: 'channels', description: 'Sending messages from an agent’s number, and their delivery statuses.' },
  { name: 'triggers', description: 'Starting conversations at an agent’s trigger points (permission Triggers).' },
  { name: 'conversations', description: 'Conversations and their messages (permission Channels or Triggers).' },
  { name: 'campaigns', description: 'Webhook campaigns, called with the key bound to the campaign.' },
  { name: 'webhooks', description: 'Where the messaging provider posts its webhooks (signed by the provider).' },
  { name: 'sandbox', description: 'The built-in provider sandbox: a user writing in, and what it was sent.' },
  { name: 'media', description: 'Files users send and agents upload: photos, voice notes, videos, documents.' },
  { name: 'templates', description: 'The templates of an agent’s number, as the provider has them.' },
];

/** `getCampaignDeliveries`-style name for an operation missing from the table (a new route). */
function derivedOperationId(method: string, path: string): string {
  const words = path
    .split('/')
    .filter((s) => s && s !== 'api')
    .map((s) =>
      s.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : '')),
    );
  const name = words.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('');
  return `${method.toLowerCase()}${name}`;
}

/** Moves every titled schema under `node` to `components` and leaves a reference in its place. */
function hoist(node: unknown, components: Json): unknown {
  if (Array.isArray(node)) return node.map((n) => hoist(n, components));
  if (!isObject(node)) return node;
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) {
    // `properties` maps names to schemas: a property named "title" is not an annotation.
    out[key] =
      key === 'properties' && isObject(value)
        ? mapValues(value, (v) => hoist(v, components))
        : hoist(value, components);
  }
  // OpenAPI 3.0 schemas take one `example`: Fastify's swagger turns `examples` into it where it
  // looks, not inside `anyOf` (a union of named schemas), so the rest are turned here.
  if (Array.isArray(out.examples) && ('type' in out || 'anyOf' in out) && !('example' in out)) {
    out.example = out.examples[0];
    out.examples = undefined;
  }
  const title = out.title;
  if (
    typeof title === 'string' &&
    /^[A-Z][A-Za-z0-9]*$/.test(title) &&
    ('type' in out || 'anyOf' in out || 'oneOf' in out)
  ) {
    components[title] ??= out;
    return { $ref: `#/components/schemas/${title}` };
  }
  return out;
}

/** The example of each media type whose schema is a named one, by the schema's name (the first seen). */
function examplesOfMedia(paths: Json): Map<string, unknown> {
  const out = new Map<string, unknown>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const n of node) visit(n);
      return;
    }
    if (!isObject(node)) return;
    const ref = isObject(node.schema) ? node.schema.$ref : undefined;
    if (typeof ref === 'string' && node.example !== undefined) {
      const name = ref.slice(ref.lastIndexOf('/') + 1);
      if (!out.has(name)) out.set(name, node.example);
    }
    for (const value of Object.values(node)) visit(value);
  };
  visit(paths);
  return out;
}

function mapValues(obj: Json, fn: (v: unknown) => unknown): Json {
  return Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, fn(v)]));
}

/** The document as served: operation IDs, tags, license, named schemas. */
export function finishDocument(document: Json, license: { name: string; url?: string }): Json {
  const components = isObject(document.components) ? { ...document.components } : {};
  const schemas: Json = isObject(components.schemas) ? { ...components.schemas } : {};
  const paths: Json = {};
  for (const [path, item] of Object.entries(isObject(document.paths) ? document.paths : {})) {
    if (!isObject(item)) continue;
    const methods: Json = {};
    for (const [method, operation] of Object.entries(item)) {
      if (!isObject(operation)) {
        methods[method] = operation;
        continue;
      }
      const id = OPERATION_IDS[`${method.toUpperCase()} ${path}`] ?? derivedOperationId(method, path);
      methods[method] = { operationId: id, ...(hoist(operation, schemas) as Json) };
    }
    paths[path] = methods;
  }
  // Fastify's swagger moves a body schema's `examples` to its media type: a named schema takes the
  // first of them back, so that each component carries its example.
  const mediaExamples = examplesOfMedia(paths);
  for (const [name, schema] of Object.entries(schemas)) {
    const example = SCHEMA_EXAMPLES[name] ?? mediaExamples.get(name);
    if (isObject(schema) && !('example' in schema) && !('examples' in schema) && example !== undefined) {
      schemas[name] = { ...schema, example };
    }
  }
  return {
    ...document,
    info: { ...(isObject(document.info) ? document.info : {}), license },
    tags: TAGS,
    paths,
    components: { ...components, schemas },
  };
}

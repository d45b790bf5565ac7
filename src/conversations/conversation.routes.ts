import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { BEARER, keyEpochConfirmer, principalOf, requireKey } from '../http/auth.js';
import { errorResponses } from '../http/errors.js';
import {
  ConversationIdParams,
  ConversationList,
  ConversationListQuery,
  ConversationSchema,
  HandoffBody,
  ThreadPage,
  ThreadQuery,
} from './conversation.schemas.js';
import {
  type ConversationDeps,
  closeConversation,
  getConversation,
  listConversationMessages,
  listConversations,
  type Reader,
} from './conversation.service.js';
import { handOff, release } from './handoff.service.js';

/** Who reads: the key's organization, narrowed to its agent for an agent key. */
const readerOf = (request: FastifyRequest): Reader => {
  const principal = principalOf(request);
  return { orgId: principal.orgId, agentId: principal.scope === 'agent' ? principal.agentId : null };
};

const DESCRIBE_SCOPE = "Permission Channels or Triggers. An agent key sees only its own agent's conversations.";

/** Conversations: list, one, its thread, close. */
export const conversationRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const auth = requireKey(ctx, ['channels', 'triggers']);
  const getByIdAuth = requireKey(ctx, ['channels', 'triggers'], { epochInQuery: true });
  const deps: ConversationDeps = {
    db: ctx.db,
    jobs: ctx.jobs,
    clock: ctx.clock,
    idleMs: ctx.config.conversations.idleMs,
  };

  app.get(
    '/api/conversations',
    {
      config: { family: 'channel' },
      onRequest: auth,
      schema: {
        summary: 'List conversations',
        description: `Newest first, with cursor pagination. ${DESCRIBE_SCOPE} Naming another agent with an agent key is 403.`,
        tags: ['conversations'],
        security: BEARER,
        querystring: ConversationListQuery,
        response: { 200: ConversationList, ...errorResponses('channel', [400, 401, 403]) },
      },
    },
    async (request) => listConversations(ctx.db, readerOf(request), request.query),
  );

  app.get(
    '/api/conversations/:conversationId',
    {
      config: { family: 'channel' },
      onRequest: getByIdAuth,
      schema: {
        summary: 'A conversation',
        description: `${DESCRIBE_SCOPE} Another agent's conversation is 404, as if absent.`,
        tags: ['conversations'],
        security: BEARER,
        params: ConversationIdParams,
        response: { 200: ConversationSchema, ...errorResponses('channel', [400, 401, 403, 404]) },
      },
    },
    async (request) =>
      getConversation(ctx.db, () => readerOf(request), request.params.conversationId, keyEpochConfirmer(ctx, request)),
  );

  app.get(
    '/api/conversations/:conversationId/messages',
    {
      config: { family: 'channel' },
      onRequest: auth,
      schema: {
        summary: 'The messages of a conversation',
        description: `Both directions, oldest first, with cursor pagination. ${DESCRIBE_SCOPE}`,
        tags: ['conversations'],
        security: BEARER,
        params: ConversationIdParams,
        querystring: ThreadQuery,
        response: { 200: ThreadPage, ...errorResponses('channel', [400, 401, 403, 404]) },
      },
    },
    async (request) =>
      listConversationMessages(ctx.db, readerOf(request), request.params.conversationId, request.query),
  );

  app.post(
    '/api/conversations/:conversationId/close',
    {
      config: { family: 'channel' },
      onRequest: auth,
      schema: {
        summary: 'Close a conversation',
        description:
          `Closes it and raises \`conversation.closed\`; the next message between the agent and the end user opens ` +
          `a new one. Closing a closed conversation answers it as it is. ${DESCRIBE_SCOPE}`,
        tags: ['conversations'],
        security: BEARER,
        params: ConversationIdParams,
        response: { 200: ConversationSchema, ...errorResponses('channel', [400, 401, 403, 404]) },
      },
    },
    async (request) => closeConversation(deps, readerOf(request), request.params.conversationId, 'closed'),
  );

  app.post(
    '/api/conversations/:conversationId/handoff',
    {
      config: { family: 'channel' },
      onRequest: auth,
      // A request with no body at all hands over with no reason and no note.
      preValidation: async (request) => {
        if (request.body === undefined || request.body === null) (request as { body: unknown }).body = {};
      },
      schema: {
        summary: 'Hand a conversation to people',
        description:
          'The bot asks for a person: the conversation goes to the dashboard\'s inbox (`handler: "human"`), ' +
          "`conversation.handoff` is raised, and until it is released the agent's own hook gets no `message.received` " +
          "for it (the organization's endpoints still do; the agent's key can still send). A conversation people " +
          `hold already is answered as it is; a closed one is 400. ${DESCRIBE_SCOPE}`,
        tags: ['conversations'],
        security: BEARER,
        params: ConversationIdParams,
        body: HandoffBody,
        response: { 200: ConversationSchema, ...errorResponses('channel', [400, 401, 403, 404]) },
      },
    },
    async (request) =>
      handOff(deps, readerOf(request), request.params.conversationId, {
        reason: request.body.reason,
        note: request.body.note,
        by: { type: 'agent' },
      }),
  );

  app.post(
    '/api/conversations/:conversationId/release',
    {
      config: { family: 'channel' },
      onRequest: auth,
      schema: {
        summary: 'Hand a conversation back to the bot',
        description:
          'People are done: the agent\'s hook hears the end user again (`handler: "bot"`, no assignee, no handoff) and ' +
          '`conversation.released` is raised. A conversation the bot holds already is answered as it is; a closed one ' +
          `is 400. ${DESCRIBE_SCOPE}`,
        tags: ['conversations'],
        security: BEARER,
        params: ConversationIdParams,
        response: { 200: ConversationSchema, ...errorResponses('channel', [400, 401, 403, 404]) },
      },
    },
    async (request) => release(deps, readerOf(request), request.params.conversationId, { type: 'agent' }),
  );
};

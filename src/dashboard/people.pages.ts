import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { AppError, isAppError } from '../shared/errors.js';
import {
  cookies,
  field,
  formatTime,
  HIDDEN,
  html,
  isHtmx,
  KEYS_PATH,
  type PageKit,
  redirectAfterPost,
  SESSION_COOKIE,
  setCookie,
} from './page-kit.js';
import { MIN_PASSWORD_LENGTH } from './password.js';
import {
  acceptInvitation,
  INVITATION_TTL_MS,
  invitationByToken,
  invitePerson,
  listPeople,
  mayGrant,
  removePerson,
  withdrawInvitation,
} from './people.service.js';
import { endSession, openSession, type Session } from './session.service.js';
import { canManage, ROLES } from './user.service.js';
import { renderPage, renderPartial } from './views.js';

const PEOPLE_PATH = '/dashboard/people';
const ROLE_WORDS = { owner: 'Owner', admin: 'Admin', member: 'Member' } as const;
/** The invitation page: the token rides in the query, which the request log redacts. */
const INVITATION_PATH = '/dashboard/invitation';

const sentence = (message: string) => {
  const text = message.charAt(0).toUpperCase() + message.slice(1);
  return /[.!?]$/.test(text) ? text : `${text}.`;
};

/**
 * People (/dashboard/people): the organization's people and open invitations. Owners and admins
 * invite a person with a role (a link shown once, valid for 7 days, working once) and remove
 * people; only owners grant or remove the owner role; the last owner stays. The link's page
 * (/dashboard/invitation) lets the invited person choose a password and signs them in.
 */
export function registerPeoplePages(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  const { db, clock } = ctx;

  const peoplePage = async (session: Session, dialog?: string) => {
    const { people, invitations } = await listPeople(db, session.org.id, clock.now());
    const manage = canManage(session.user.role);
    return renderPage(
      'people',
      {
        title: 'People',
        session,
        section: 'people',
        org: session.org,
        csrfToken: session.csrfToken,
        canManage: manage,
        people: people.map((p) => ({
          id: p.id,
          email: p.email,
          role: ROLE_WORDS[p.role],
          added: formatTime(p.createdAt),
          lastSignIn: p.lastSignInAt === null ? 'Not known' : formatTime(p.lastSignInAt),
          you: p.id === session.user.id,
          canRemove: manage && (p.role !== 'owner' || session.user.role === 'owner'),
        })),
        invitations: invitations.map((i) => ({
          id: i.id,
          email: i.email,
          role: ROLE_WORDS[i.role],
          invitedBy: i.invitedBy,
          expires: formatTime(i.expiresAt),
        })),
      },
      dialog,
    );
  };

  const grantable = (session: Session) =>
    ROLES.filter((r) => mayGrant(session.user.role, r)).map((r) => ({ value: r, label: ROLE_WORDS[r] }));
  const inviteDialog = (session: Session, values: { email: string; role: string }, open: boolean, error?: string) =>
    renderPartial('invite-dialog', { csrfToken: session.csrfToken, roles: grantable(session), values, open, error });
  const removeDialog = async (session: Session, userId: string, open: boolean) => {
    const person = (await listPeople(db, session.org.id, clock.now())).people.find((p) => p.id === userId);
    if (!person) throw new AppError('NOT_FOUND', 'No such person in your organization.');
    return renderPartial('remove-person-dialog', {
      csrfToken: session.csrfToken,
      person,
      you: person.id === session.user.id,
      open,
    });
  };
  const origin = (request: FastifyRequest) => `${request.protocol}://${request.host}`;

  app.get(PEOPLE_PATH, kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const query = request.query as Record<string, string | undefined>;
    let dialog: string | undefined;
    if (query.invite !== undefined && canManage(session.user.role)) {
      dialog = inviteDialog(session, { email: '', role: 'admin' }, true);
    } else if (query.remove && canManage(session.user.role)) {
      dialog = await removeDialog(session, query.remove, true);
    }
    return html(reply, await peoplePage(session, dialog));
  });
  app.get(`${PEOPLE_PATH}/invite`, kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    if (!isHtmx(request)) return reply.redirect(`${PEOPLE_PATH}?invite=1`, 303);
    return html(reply, inviteDialog(session, { email: '', role: 'admin' }, false));
  });
  app.post(`${PEOPLE_PATH}/invitations`, kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const values = { email: field(request.body, 'email'), role: field(request.body, 'role') };
    const htmx = isHtmx(request);
    let invited: Awaited<ReturnType<typeof invitePerson>>;
    try {
      invited = await invitePerson(db, clock, { orgId: session.org.id, actor: session.user, ...values });
    } catch (err) {
      if (!isAppError(err) || !['INVALID_BODY', 'CONFLICT', 'FORBIDDEN'].includes(err.code)) throw err;
      const dialog = inviteDialog(session, values, !htmx, sentence(err.message));
      // htmx swaps only successful answers by default, so the dialog with its explanation is a 200 there.
      return htmx ? html(reply, dialog) : html(reply, await peoplePage(session, dialog), 400);
    }
    const dialog = renderPartial('invited-dialog', {
      invitation: invited.invitation,
      role: ROLE_WORDS[invited.invitation.role],
      link: `${origin(request)}${INVITATION_PATH}?token=${encodeURIComponent(invited.token)}`,
      days: Math.round(INVITATION_TTL_MS / 86_400_000),
      open: !htmx,
    });
    return htmx ? html(reply, dialog) : html(reply, await peoplePage(session, dialog));
  });
  app.post(`${PEOPLE_PATH}/invitations/:invitationId/withdraw`, kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const { invitationId } = request.params as { invitationId: string };
    await withdrawInvitation(db, clock, { orgId: session.org.id, actor: session.user, id: invitationId });
    return redirectAfterPost(request, reply, PEOPLE_PATH);
  });
  app.get(`${PEOPLE_PATH}/:userId/remove`, kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const { userId } = request.params as { userId: string };
    if (!isHtmx(request)) return reply.redirect(`${PEOPLE_PATH}?remove=${encodeURIComponent(userId)}`, 303);
    return html(reply, await removeDialog(session, userId, false));
  });
  app.post(`${PEOPLE_PATH}/:userId/remove`, kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const { userId } = request.params as { userId: string };
    const removed = await removePerson(db, clock, { orgId: session.org.id, actor: session.user, userId });
    // Removing oneself ends one's own session with the others.
    if (removed.id === session.user.id) return redirectAfterPost(request, reply, '/dashboard/login?ended=1');
    return redirectAfterPost(request, reply, PEOPLE_PATH);
  });

  const invitationPage = async (token: string, error?: string) => {
    const { invitation, org } = await invitationByToken(db, clock, token);
    return renderPage('invitation', {
      title: `Join ${org.name}`,
      org,
      invitation,
      role: ROLE_WORDS[invitation.role],
      token,
      minLength: MIN_PASSWORD_LENGTH,
      error,
    });
  };
  app.get(INVITATION_PATH, HIDDEN, async (request, reply) => {
    const token = (request.query as Record<string, string | undefined>).token ?? '';
    return html(reply, await invitationPage(token));
  });
  // The link's token is the proof this form is the invited person's: no session, no other CSRF token.
  app.post(INVITATION_PATH, HIDDEN, async (request, reply) => {
    const token = field(request.body, 'token');
    const password = field(request.body, 'password');
    if (password !== field(request.body, 'confirm')) {
      return html(reply, await invitationPage(token, 'The two passwords differ. Type the same one twice.'), 400);
    }
    let user: Awaited<ReturnType<typeof acceptInvitation>>;
    try {
      user = await acceptInvitation(db, clock, token, password);
    } catch (err) {
      if (!isAppError(err) || (err.code !== 'INVALID_BODY' && err.code !== 'CONFLICT')) throw err;
      return html(reply, await invitationPage(token, sentence(err.message)), 400);
    }
    const { token: sessionToken } = await openSession(db, clock, user);
    await endSession(db, cookies(request)[SESSION_COOKIE]);
    setCookie(request, reply, SESSION_COOKIE, sessionToken, { path: '/dashboard' });
    return reply.redirect(KEYS_PATH, 303);
  });
}

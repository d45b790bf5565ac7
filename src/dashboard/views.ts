import { Eta } from 'eta';

/**
 * The dashboard's templates (Eta, every `<%= %>` HTML-escaped). They live in this module rather
 * than in files so the build (dist/) carries them with no copy step.
 */
const TEMPLATES: Record<string, string> = {
  layout: `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="htmx-config" content='{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false}'>
<title><%= it.title %> · Parley</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/dashboard/static/pico.classless.min.css">
<link rel="stylesheet" href="/dashboard/static/dashboard.css">
<script src="/dashboard/static/htmx.min.js" defer></script>
<script src="/dashboard/static/dashboard.js" defer></script>
</head>
<body<% if (it.session) { %> hx-headers='{"X-CSRF-Token": "<%= it.session.csrfToken %>"}'<% } %>>
<header>
<nav aria-label="Main">
<ul><li><strong>Parley</strong></li></ul>
<% if (it.session) { %>
<ul>
<li><a href="/dashboard/settings"<% if (it.section === 'settings') { %> aria-current="page"<% } %>>Settings</a></li>
<li><a href="/dashboard/agents"<% if (it.section === 'agents') { %> aria-current="page"<% } %>>Agents</a></li>
<li><a href="/dashboard/conversations"<% if (it.section === 'conversations') { %> aria-current="page"<% } %>>Conversations</a></li>
<li><a href="/dashboard/campaigns"<% if (it.section === 'campaigns') { %> aria-current="page"<% } %>>Campaigns</a></li>
<li><a href="/dashboard/end-users"<% if (it.section === 'end-users') { %> aria-current="page"<% } %>>End users</a></li>
<li><a href="/dashboard/audit"<% if (it.section === 'audit') { %> aria-current="page"<% } %>>Audit log</a></li>
<li><span class="who"><%= it.session.user.email %> (<%= it.session.user.role %>, <%= it.session.org.name %>)</span></li>
<li><form method="post" action="/dashboard/logout" class="inline"><input type="hidden" name="_csrf" value="<%= it.session.csrfToken %>"><button type="submit" class="secondary">Sign out</button></form></li>
</ul>
<% } %>
</nav>
</header>
<main id="main">
<%~ it.body %>
</main>
<div id="dialog-slot"><%~ it.dialog || '' %></div>
</body>
</html>`,

  login: `<h1>Sign in</h1>
<% if (it.notice) { %><p role="status"><%= it.notice %></p><% } %>
<% if (it.error) { %><p role="alert" class="error" id="login-error"><%= it.error %></p><% } %>
<form method="post" action="/dashboard/login">
<input type="hidden" name="_csrf" value="<%= it.loginCsrf %>">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="<%= it.email || '' %>"<% if (it.error) { %> aria-describedby="login-error"<% } %>>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>`,

  settings: `<h1>Settings</h1>
<nav aria-label="Settings">
<ul><li><a href="/dashboard/settings/integrations">Integrations</a></li></ul>
</nav>`,

  integrations: `<nav aria-label="Breadcrumb"><ul><li><a href="/dashboard/settings">Settings</a></li><li>Integrations</li></ul></nav>
<h1>Integrations</h1>
<nav aria-label="Integrations">
<ul><li><a href="/dashboard/settings/integrations/api-keys">API Keys</a></li></ul>
</nav>`,

  keys: `<nav aria-label="Breadcrumb"><ul><li><a href="/dashboard/settings">Settings</a></li><li><a href="/dashboard/settings/integrations">Integrations</a></li><li>API Keys</li></ul></nav>
<h1>API Keys</h1>
<% if (it.org.plan !== 'paid') { %>
<article aria-labelledby="upgrade-title">
<h2 id="upgrade-title">API keys come with the paid plan</h2>
<p>API keys let your applications and AI agents call the Parley API: send messages, start triggers and manage end users. Upgrade <%= it.org.name %> to the paid plan to create them.</p>
<% if (it.canUpgrade && it.upgradeUrl) { %>
<a href="<%= it.upgradeUrl %>" role="button">Upgrade</a>
<% } else if (it.canUpgrade) { %>
<a href="/dashboard/settings/integrations/api-keys?upgrade=1" hx-get="/dashboard/upgrade" hx-target="#dialog-slot" role="button">Upgrade</a>
<% } else { %>
<p>Only an owner of the organization can upgrade it.</p>
<% } %>
</article>
<% } else { %>
<% if (it.canManage) { %>
<p><a href="/dashboard/settings/integrations/api-keys?create=1" hx-get="/dashboard/settings/integrations/api-keys/new" hx-target="#dialog-slot" role="button">Create API key</a></p>
<% } else { %>
<p>You can look at the keys; an owner or an admin creates and revokes them.</p>
<% } %>
<% if (it.keys.length === 0) { %>
<article>
<h2>No API keys yet</h2>
<p>API keys let your applications and AI agents call the Parley API: send messages, start triggers and manage end users. A key belongs to this organization, may be limited to one AI agent, and carries only the permissions you give it.</p>
</article>
<% } else { %>
<figure>
<table>
<caption>API keys of <%= it.org.name %></caption>
<thead><tr><th scope="col">Label</th><th scope="col">Key prefix</th><th scope="col">Scope</th><th scope="col">Agent</th><th scope="col">Permissions</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">State</th><% if (it.canManage) { %><th scope="col"><span class="visually-hidden">Actions</span></th><% } %></tr></thead>
<tbody>
<% it.keys.forEach(function (k) { %>
<tr data-key-id="<%= k.id %>">
<td><%= k.label %></td>
<td><code><%= k.prefix %></code></td>
<td><%= k.scopeText %></td>
<td><%= k.agentName %></td>
<td><%= k.permissionsText %></td>
<td class="when"><%= k.createdText %></td>
<td class="when"><%= k.lastUsedText %></td>
<td><%= k.stateText %></td>
<% if (it.canManage) { %><td><% if (!k.revoked) { %><a href="/dashboard/settings/integrations/api-keys?revoke=<%= k.id %>" hx-get="/dashboard/settings/integrations/api-keys/<%= k.id %>/revoke" hx-target="#dialog-slot" role="button" class="secondary" aria-label="Revoke <%= k.label %>">Revoke</a><% } %></td><% } %>
</tr>
<% }) %>
</tbody>
</table>
</figure>
<% } %>
<% } %>`,

  createDialog: `<dialog aria-labelledby="create-title" data-modal<% if (it.open) { %> open<% } %>>
<article>
<h2 id="create-title">Create API key</h2>
<% if (it.error) { %><p role="alert" class="error" id="create-error"><%= it.error %></p><% } %>
<form method="post" action="/dashboard/settings/integrations/api-keys" hx-post="/dashboard/settings/integrations/api-keys" hx-target="#dialog-slot" class="create-key">
<input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
<label for="key-label">Label</label>
<input id="key-label" name="label" required maxlength="100" value="<%= it.values.label %>" autofocus<% if (it.error) { %> aria-describedby="create-error"<% } %>>
<label for="key-scope">Scope</label>
<select id="key-scope" name="scope">
<option value="organization"<% if (it.values.scope !== 'agent') { %> selected<% } %>>Whole organization</option>
<option value="agent"<% if (it.values.scope === 'agent') { %> selected<% } %>>Specific AI agent</option>
</select>
<div class="agent-field">
<label for="key-agent">Agent</label>
<% if (it.agents.length === 0) { %>
<p id="no-agents">This organization has no AI agents yet.</p>
<select id="key-agent" name="agent" disabled aria-describedby="no-agents"><option value="">No agents</option></select>
<% } else { %>
<select id="key-agent" name="agent">
<% it.agents.forEach(function (a) { %><option value="<%= a.id %>"<% if (it.values.agent === a.id) { %> selected<% } %>><%= a.name %></option><% }) %>
</select>
<% } %>
</div>
<fieldset>
<legend>Permissions</legend>
<label><input type="checkbox" name="permissions" value="triggers"<% if (it.values.permissions.includes('triggers')) { %> checked<% } %>> Triggers</label>
<label><input type="checkbox" name="permissions" value="channels"<% if (it.values.permissions.includes('channels')) { %> checked<% } %>> Channels</label>
<label class="endusers-field"><input type="checkbox" name="permissions" value="endusers"<% if (it.values.permissions.includes('endusers')) { %> checked<% } %>> End-users</label>
</fieldset>
<footer>
<a href="/dashboard/settings/integrations/api-keys" role="button" class="secondary" data-close>Cancel</a>
<button type="submit">Create</button>
</footer>
</form>
</article>
</dialog>`,

  createdDialog: `<dialog aria-labelledby="created-title" data-modal data-confirm-close<% if (it.open) { %> open<% } %>>
<article>
<h2 id="created-title">API key created</h2>
<p><strong>Copy this key now. It will not be shown again.</strong></p>
<label for="new-key">Key for <%= it.apiKey.label %></label>
<input id="new-key" readonly value="<%= it.key %>">
<p><button type="button" data-copy="#new-key">Copy</button> <span role="status" class="copied"></span></p>
<details class="close-confirm">
<summary>Close</summary>
<p>Have you copied the key? Once this closes, only its prefix <code><%= it.apiKey.prefix %></code> is ever shown.</p>
<a href="<%= it.back || '/dashboard/settings/integrations/api-keys' %>" role="button">Yes, close</a>
</details>
</article>
</dialog>`,

  /**
   * The frame of every confirmation: a modal dialog naming what is about to happen, the form that
   * does it (CSRF token included), Cancel and the confirming button. Used as a layout: the dialog's
   * own template renders the explanation, which arrives here as `it.body`.
   */
  confirmDialog: `<dialog aria-labelledby="<%= it.titleId %>" data-modal<% if (it.open) { %> open<% } %>>
<article>
<h2 id="<%= it.titleId %>"><%= it.title %></h2>
<%~ it.body %>
<form method="post" action="<%= it.action %>" hx-post="<%= it.action %>" hx-target="#dialog-slot">
<input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
<footer>
<a href="<%= it.back %>" role="button" class="secondary" data-close>Cancel</a>
<button type="submit"><%= it.confirm %></button>
</footer>
</form>
</article>
</dialog>`,

  revokeDialog: `<% var keysBase = it.base || '/dashboard/settings/integrations/api-keys' %><% layout('@confirmDialog', { titleId: 'revoke-title', title: 'Revoke API key ' + it.apiKey.label + '?', action: keysBase + '/' + it.apiKey.id + '/revoke', back: it.back || keysBase, confirm: 'Revoke' }) %>
<p>The key <strong><%= it.apiKey.label %></strong> (<code><%= it.apiKey.prefix %></code>) stops working at once: its next API request gets 401. This cannot be undone.</p>`,

  removeCampaignDialog: `<% var page = '/dashboard/campaigns/' + it.campaign.id %><% layout('@confirmDialog', { titleId: 'remove-campaign-title', title: 'Remove campaign ' + it.campaign.name + '?', action: page + '/remove', back: page, confirm: 'Remove' }) %>
<p>The campaign is removed for good: its keys stop working at once (their next request gets 401), its <%= it.queued %> queued deliver<%= it.queued === 1 ? 'y is' : 'ies are' %> never sent, and its deliveries are no longer listed. Messages it already sent, and their conversations, stay. This cannot be undone.</p>`,

  upgradeDialog: `<% layout('@confirmDialog', { titleId: 'upgrade-dialog-title', title: 'Upgrade to the paid plan?', action: '/dashboard/upgrade', back: '/dashboard/settings/integrations/api-keys', confirm: 'Upgrade' }) %>
<p><%= it.org.name %> moves to the paid plan, which allows API keys.</p>`,

  audit: `<h1>Audit log</h1>
<% if (it.entries.length === 0) { %>
<p>Nothing recorded yet. Key, plan, endpoint and people changes appear here with who made them and when.</p>
<% } else { %>
<figure>
<table>
<caption>Changes in <%= it.org.name %>, newest first</caption>
<thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">What</th><th scope="col">Target</th></tr></thead>
<tbody>
<% it.entries.forEach(function (e) { %>
<tr><td><%= e.when %></td><td><%= e.actor %></td><td><%= e.what %></td><td><%= e.target %></td></tr>
<% }) %>
</tbody>
</table>
</figure>
<% } %>`,

  agents: `<h1>Agents</h1>
<% if (it.error) { %><p role="alert" class="error"><%= it.error %></p><% } %>
<% if (it.agents.length === 0) { %>
<p>No AI agents yet. Create one with <code>npx parley agent create</code>; its number, triggers and hook endpoint then appear here.</p>
<% } %>
<% it.agents.forEach(function (a) { %>
<section aria-labelledby="agent-<%= a.id %>">
<h2 id="agent-<%= a.id %>"><%= a.name %></h2>
<p>ID <code><%= a.id %></code> · Number: <%= a.number %></p>
<h3>Hook endpoint</h3>
<% if (a.endpoints.length === 0) { %><p>None: this agent hears of no events (<code>npx parley endpoint create --agent <%= a.id %></code>).</p><% } else { %>
<ul><% a.endpoints.forEach(function (e) { %><li><code><%= e.url %></code> (<%= e.state %>)</li><% }) %></ul>
<% } %>
<h3>Triggers</h3>
<% if (a.triggers.length === 0) { %><p>No triggers.</p><% } else { %>
<table>
<caption>Triggers of <%= a.name %></caption>
<thead><tr><th scope="col">ID</th><th scope="col">Name</th><th scope="col">Template</th><th scope="col">Language</th><th scope="col">State</th><% if (it.canManage) { %><th scope="col"><span class="visually-hidden">Actions</span></th><% } %></tr></thead>
<tbody>
<% a.triggers.forEach(function (t) { %>
<tr><td><code><%= t.id %></code></td><td><%= t.name %></td><td><%= t.template %></td><td><%= t.language %></td><td><%= t.enabled ? 'Enabled' : 'Disabled' %></td>
<% if (it.canManage) { %><td><form method="post" action="/dashboard/agents/<%= a.id %>/triggers/<%= t.id %>/<%= t.enabled ? 'disable' : 'enable' %>" class="inline"><input type="hidden" name="_csrf" value="<%= it.csrfToken %>"><button type="submit" class="secondary" aria-label="<%= t.enabled ? 'Disable' : 'Enable' %> <%= t.name %>"><%= t.enabled ? 'Disable' : 'Enable' %></button></form></td><% } %>
</tr>
<% }) %>
</tbody>
</table>
<% } %>
<% if (it.canManage) { %>
<details>
<summary>Add a trigger to <%= a.name %></summary>
<form method="post" action="/dashboard/agents/<%= a.id %>/triggers">
<input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
<label for="tn-<%= a.id %>">Trigger name</label><input id="tn-<%= a.id %>" name="name" required maxlength="200">
<label for="tt-<%= a.id %>">Template</label><input id="tt-<%= a.id %>" name="template" required maxlength="512">
<label for="tl-<%= a.id %>">Language</label><input id="tl-<%= a.id %>" name="language" required value="en_US" pattern="[a-z]{2,3}_[A-Z]{2}">
<label for="ti-<%= a.id %>">Trigger ID (optional)</label><input id="ti-<%= a.id %>" name="id" pattern="[a-z0-9_-]{1,64}">
<button type="submit">Add trigger</button>
</form>
</details>
<% } %>
</section>
<% }) %>`,

  conversations: `<h1>Conversations</h1>
<form method="get" action="/dashboard/conversations" class="filters">
<label for="f-agent">Agent</label>
<select id="f-agent" name="agent"><option value="">All agents</option>
<% it.agents.forEach(function (a) { %><option value="<%= a.id %>"<% if (it.agent === a.id) { %> selected<% } %>><%= a.name %></option><% }) %>
</select>
<label for="f-status">Status</label>
<select id="f-status" name="status">
<option value=""<% if (!it.status) { %> selected<% } %>>Any</option>
<option value="open"<% if (it.status === 'open') { %> selected<% } %>>Open</option>
<option value="closed"<% if (it.status === 'closed') { %> selected<% } %>>Closed</option>
</select>
<button type="submit">Filter</button>
</form>
<% if (it.rows.length === 0) { %><p>No conversations match.</p><% } else { %>
<table>
<caption>Conversations, newest first</caption>
<thead><tr><th scope="col">Started</th><th scope="col">Agent</th><th scope="col">End user</th><th scope="col">Trigger</th><th scope="col">Status</th><th scope="col">Last message</th></tr></thead>
<tbody>
<% it.rows.forEach(function (c) { %>
<tr><td><a href="/dashboard/conversations/<%= c.id %>"><%= c.started %></a></td><td><%= c.agent %></td><td><code><%= c.endUserId %></code></td><td><%= c.trigger %></td><td><%= c.status %></td><td><%= c.last %></td></tr>
<% }) %>
</tbody>
</table>
<% if (it.next) { %><p><a href="<%= it.next %>">Older conversations</a></p><% } %>
<% } %>`,

  thread: `<nav aria-label="Breadcrumb"><ul><li><a href="/dashboard/conversations">Conversations</a></li><li><%= it.conversation.id %></li></ul></nav>
<h1>Conversation with <%= it.endUserName %></h1>
<p>Agent <%= it.agentName %> · <%= it.conversation.status === 'open' ? 'Open' : 'Closed' %> · started <%= it.started %></p>
<% if (it.messages.length === 0) { %><p>No messages.</p><% } else { %>
<ol class="thread">
<% it.messages.forEach(function (m) { %>
<li><strong><%= m.who %></strong> <small><%= m.at %></small><br><%= m.text %><% if (m.status) { %> <small>(<%= m.status %>)</small><% } %></li>
<% }) %>
</ol>
<% if (it.next) { %><p><a href="<%= it.next %>">Later messages</a></p><% } %>
<% } %>`,

  campaigns: `<h1>Campaigns</h1>
<% if (it.removed) { %><p role="status">Removed campaign <strong><%= it.removed %></strong>.</p><% } %>
<% if (it.rows.length === 0) { %>
<p>No campaigns yet. Create one with <code>npx parley campaign create</code>; it then appears here with its keys and deliveries.</p>
<% } else { %>
<figure>
<table>
<caption>Campaigns of <%= it.org.name %></caption>
<thead><tr><th scope="col">Name</th><th scope="col">Agent</th><th scope="col">Template</th><th scope="col">Status</th><% it.statuses.forEach(function (s) { %><th scope="col"><%= s.label %></th><% }) %></tr></thead>
<tbody>
<% it.rows.forEach(function (c) { %>
<tr data-campaign-id="<%= c.id %>"><td><a href="/dashboard/campaigns/<%= c.id %>"><%= c.name %></a></td><td><%= c.agent %></td><td><%= c.template %></td><td><%= c.status %></td><% it.statuses.forEach(function (s) { %><td><%= c.counts[s.key] %></td><% }) %></tr>
<% }) %>
</tbody>
</table>
</figure>
<% } %>`,

  campaign: `<nav aria-label="Breadcrumb"><ul><li><a href="/dashboard/campaigns">Campaigns</a></li><li><%= it.campaign.name %></li></ul></nav>
<h1><%= it.campaign.name %></h1>
<p>ID <code><%= it.campaign.id %></code> · Agent: <%= it.agent %> · Template: <%= it.template %></p>
<p>Status: <strong id="campaign-status"><%= it.status %></strong></p>
<% if (it.canManage) { %>
<div class="actions">
<form method="post" action="/dashboard/campaigns/<%= it.campaign.id %>/<%= it.campaign.status === 'paused' ? 'resume' : 'pause' %>" class="inline">
<input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
<button type="submit"<% if (it.campaign.status !== 'paused') { %> class="secondary"<% } %>><%= it.campaign.status === 'paused' ? 'Resume' : 'Pause' %></button>
</form>
<a href="/dashboard/campaigns/<%= it.campaign.id %>?remove=1" hx-get="/dashboard/campaigns/<%= it.campaign.id %>/remove" hx-target="#dialog-slot" role="button" class="secondary outline">Remove campaign</a>
</div>
<% } %>
<h2>Deliveries by status</h2>
<table>
<caption>Deliveries of <%= it.campaign.name %> by status</caption>
<thead><tr><% it.statuses.forEach(function (s) { %><th scope="col"><%= s.label %></th><% }) %></tr></thead>
<tbody><tr><% it.statuses.forEach(function (s) { %><td><%= it.counts[s.key] %></td><% }) %></tr></tbody>
</table>
<h2>Deliveries</h2>
<% if (it.deliveries.length === 0) { %><p>No deliveries yet. Each recipient posted to the campaign's webhook becomes one.</p><% } else { %>
<figure>
<table>
<caption>Deliveries of <%= it.campaign.name %>, most recent first</caption>
<thead><tr><th scope="col">To</th><th scope="col">Status</th><th scope="col">Error</th><th scope="col">Accepted</th><th scope="col">Sent</th><th scope="col">Updated</th></tr></thead>
<tbody>
<% it.deliveries.forEach(function (d) { %>
<tr><td><%= d.to %></td><td><%= d.status %></td><td><%= d.error %></td><td class="when"><%= d.created %></td><td class="when"><%= d.sent %></td><td class="when"><%= d.updated %></td></tr>
<% }) %>
</tbody>
</table>
</figure>
<% if (it.next) { %><p><a href="<%= it.next %>">More deliveries</a></p><% } %>
<% } %>
<h2>Campaign keys</h2>
<p>A campaign key calls only this campaign's endpoints (<code>POST /api/campaigns/<%= it.campaign.id %>/webhook</code>); its permission is Campaigns.</p>
<% if (it.org.plan !== 'paid') { %>
<p>API keys come with the paid plan: see <a href="/dashboard/settings/integrations/api-keys">API Keys</a>.</p>
<% } else if (it.canManage) { %>
<p><a href="/dashboard/campaigns/<%= it.campaign.id %>?create=1" hx-get="/dashboard/campaigns/<%= it.campaign.id %>/keys/new" hx-target="#dialog-slot" role="button">Create campaign key</a></p>
<% } else { %>
<p>You can look at the keys; an owner or an admin creates and revokes them.</p>
<% } %>
<% if (it.keys.length === 0) { %><p>No keys for this campaign yet.</p><% } else { %>
<figure>
<table>
<caption>Keys of <%= it.campaign.name %></caption>
<thead><tr><th scope="col">Label</th><th scope="col">Key prefix</th><th scope="col">Permissions</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">State</th><% if (it.canManage) { %><th scope="col"><span class="visually-hidden">Actions</span></th><% } %></tr></thead>
<tbody>
<% it.keys.forEach(function (k) { %>
<tr data-key-id="<%= k.id %>">
<td><%= k.label %></td><td><code><%= k.prefix %></code></td><td><%= k.permissionsText %></td><td class="when"><%= k.createdText %></td><td class="when"><%= k.lastUsedText %></td><td><%= k.stateText %></td>
<% if (it.canManage) { %><td><% if (!k.revoked) { %><a href="/dashboard/campaigns/<%= it.campaign.id %>?revoke=<%= k.id %>" hx-get="/dashboard/campaigns/<%= it.campaign.id %>/keys/<%= k.id %>/revoke" hx-target="#dialog-slot" role="button" class="secondary" aria-label="Revoke <%= k.label %>">Revoke</a><% } %></td><% } %>
</tr>
<% }) %>
</tbody>
</table>
</figure>
<% } %>`,

  campaignKeyDialog: `<dialog aria-labelledby="campaign-key-title" data-modal<% if (it.open) { %> open<% } %>>
<article>
<h2 id="campaign-key-title">Create campaign key</h2>
<% if (it.error) { %><p role="alert" class="error" id="campaign-key-error"><%= it.error %></p><% } %>
<p>For <%= it.campaign.name %>. Permission: Campaigns.</p>
<form method="post" action="/dashboard/campaigns/<%= it.campaign.id %>/keys" hx-post="/dashboard/campaigns/<%= it.campaign.id %>/keys" hx-target="#dialog-slot">
<input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
<label for="campaign-key-label">Label</label>
<input id="campaign-key-label" name="label" required maxlength="100" value="<%= it.label %>" autofocus<% if (it.error) { %> aria-describedby="campaign-key-error"<% } %>>
<footer>
<a href="/dashboard/campaigns/<%= it.campaign.id %>" role="button" class="secondary" data-close>Cancel</a>
<button type="submit">Create</button>
</footer>
</form>
</article>
</dialog>`,

  endUsers: `<h1>End users</h1>
<form method="get" action="/dashboard/end-users" role="search" class="filters">
<label for="eu-q">Search by name, email or phone</label>
<input id="eu-q" name="q" type="search" maxlength="200" value="<%= it.q %>">
<button type="submit">Search</button>
</form>
<% if (it.error) { %><p role="alert" class="error"><%= it.error %></p><% } %>
<% if (it.rows.length === 0) { %><p><%= it.q ? 'No end users match.' : 'No end users yet. They are added through the API, by import, or when someone writes to one of your numbers.' %></p><% } else { %>
<figure>
<table>
<caption>End users of <%= it.org.name %><% if (it.q) { %> matching “<%= it.q %>”<% } %>, newest first</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Email</th><th scope="col">Phone</th><th scope="col">Tags</th><th scope="col">Origin</th><th scope="col">Created</th><th scope="col">Last seen</th></tr></thead>
<tbody>
<% it.rows.forEach(function (u) { %>
<tr data-end-user-id="<%= u.id %>"><td><%= u.name %></td><td><%= u.email %></td><td><%= u.phone %></td><td><%= u.tags %></td><td><%= u.origin %></td><td class="when"><%= u.created %></td><td class="when"><%= u.lastSeen %></td></tr>
<% }) %>
</tbody>
</table>
</figure>
<% } %>
<% if (it.next) { %><p><a href="<%= it.next %>">Next page</a></p><% } %>`,

  error: `<h1><%= it.heading %></h1>
<p role="alert"><%= it.message %></p>
<p><a href="/dashboard">Back to the dashboard</a></p>`,
};

const eta = new Eta({ autoEscape: true, autoTrim: false, cache: true });
for (const [name, template] of Object.entries(TEMPLATES)) eta.loadTemplate(`@${name}`, template);

export type ViewName = keyof typeof TEMPLATES;

/** One template alone (a dialog answering htmx, say). */
export function renderPartial(name: ViewName, data: object): string {
  return eta.render(`@${name}`, data);
}

/** A whole page: the template inside the layout, with an optional dialog already open. */
export interface PageData {
  title: string;
  session?: unknown;
  section?: string;
  [name: string]: unknown;
}

export function renderPage(name: ViewName, data: PageData, dialog?: string): string {
  return eta.render('@layout', { ...data, body: renderPartial(name, data), dialog });
}

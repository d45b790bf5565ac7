/** The permission policy: names, scopes and which scope may hold which permission. */
export const PERMISSIONS = ['triggers', 'channels', 'endusers', 'campaigns'] as const;
export type Permission = (typeof PERMISSIONS)[number];

export const PERMISSION_LABELS: Record<Permission, string> = {
  triggers: 'Triggers',
  channels: 'Channels',
  endusers: 'End-users',
  campaigns: 'Campaigns',
};

export const SCOPES = ['organization', 'agent', 'campaign'] as const;
export type Scope = (typeof SCOPES)[number];

export const SCOPE_LABELS: Record<Scope, string> = {
  organization: 'Whole organization',
  agent: 'Specific AI agent',
  campaign: 'Campaign',
};

export function isPermission(value: string): value is Permission {
  return (PERMISSIONS as readonly string[]).includes(value);
}

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** Returns why a scope may not hold these permissions, or undefined when it may. */
export function scopePermissionProblem(scope: Scope, permissions: readonly Permission[]): string | undefined {
  if (permissions.length === 0) return 'a key needs at least one permission';
  if (scope === 'agent' && permissions.includes('endusers')) {
    return 'an agent-scoped key cannot hold End-users (end users belong to the whole organization)';
  }
  if (scope === 'campaign' && permissions.some((p) => p !== 'campaigns')) {
    return 'a campaign key carries Campaigns only';
  }
  // The campaign routes admit only a key bound to that campaign: Campaigns on any other key could
  // never be used, so it is refused rather than stored.
  if (scope !== 'campaign' && permissions.includes('campaigns')) {
    return `${scope === 'agent' ? 'an agent-scoped' : 'a whole-organization'} key cannot hold Campaigns: only a campaign key (scope campaign, bound to one campaign) can call a campaign's endpoints`;
  }
  return undefined;
}

export const serializePermissions = (permissions: readonly Permission[]): string =>
  PERMISSIONS.filter((p) => permissions.includes(p)).join(',');

export const parsePermissions = (stored: string): Permission[] =>
  stored.split(',').filter((p): p is Permission => isPermission(p));

export type Role = 'owner' | 'admin' | 'member';

export interface UserTable {
  id: string;
  org_id: string;
  email: string;
  role: Role;
  /** `scrypt$N$r$p$<salt>$<hash>` (base64), see src/dashboard/password.ts. */
  password_hash: string;
  created_at: number;
  updated_at: number;
  /** Set at each sign-in (null until the first); optional so that inserts need not name it. */
  last_sign_in_at?: number | null;
}

/** An invitation to join an organization: a link shown once, whose token only the hash of is kept. */
export interface InvitationTable {
  id: string;
  org_id: string;
  email: string;
  role: Role;
  /** SHA-256 (hex) of the link's token. */
  token_hash: string;
  /** The email of who invited. */
  invited_by: string;
  created_at: number;
  expires_at: number;
  /** Set when the link was used (it works once). */
  accepted_at: number | null;
}

export interface DashboardSessionTable {
  /** SHA-256 (hex) of the session token; the token lives only in the browser's cookie. */
  token_hash: string;
  user_id: string;
  org_id: string;
  created_at: number;
  last_seen_at: number;
}

export interface SignInFailureTable {
  subject: string;
  at: number;
}

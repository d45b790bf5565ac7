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

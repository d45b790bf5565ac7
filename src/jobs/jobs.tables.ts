/** A job of the embedded (SQLite) store; on PostgreSQL, pg-boss keeps its own tables. */
export interface JobTable {
  id: string;
  queue: string;
  /** JSON text. */
  payload: string;
  /** 1 for the first run; raised by each failure of the handler. */
  attempt: number;
  /** Not before this time (ms since epoch). */
  run_at: number;
  /** Claimed until this time; null while waiting. A lapsed lease means its process stopped. */
  locked_until: number | null;
  last_error: string | null;
  created_at: number;
}

/** A job that failed its last attempt, kept for an operator to look at and replay. */
export interface JobDeadLetterTable {
  id: string;
  queue: string;
  /** JSON text. */
  payload: string;
  attempts: number;
  last_error: string | null;
  failed_at: number;
}

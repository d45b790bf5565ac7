/** The end_users and end_user_tags tables as stored: snake_case, JSON in text columns, times in ms. */
export interface EndUserTable {
  id: string;
  org_id: string;
  name: string | null;
  /** searchKey(name): what `q` matches names against (null when name is). Never shown. */
  name_search: string | null;
  email: string | null;
  phone: string | null;
  /** JSON array of strings; end_user_tags mirrors it for filtering. */
  tags: string;
  origin: 'inbound' | 'imported' | 'manual';
  /** JSON object, channel → identifier. */
  channel_identifiers: string;
  /** JSON object, channel → { status, updatedAt, source }. */
  consent: string;
  /** JSON object of attributes (migration 0060); end_user_attributes mirrors it. Optional on insert. */
  attributes?: string;
  created_at: number;
  last_seen_at: number | null;
  updated_at: number;
}

export interface EndUserTagTable {
  end_user_id: string;
  org_id: string;
  tag: string;
}

/** One attribute of an end user: its value as text (numbers and booleans as their JSON text). */
export interface EndUserAttributeTable {
  end_user_id: string;
  org_id: string;
  name: string;
  value: string;
}

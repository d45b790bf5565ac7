/** The end-user record as the API shows it (spec section 2.3, plus updatedAt). */
export const ORIGINS = ['inbound', 'imported', 'manual'] as const;
export type Origin = (typeof ORIGINS)[number];

export const CHANNELS = ['msgapp'] as const;
export type Channel = (typeof CHANNELS)[number];

export const CONSENT_STATUSES = ['granted', 'denied', 'unknown'] as const;
export type ConsentStatus = (typeof CONSENT_STATUSES)[number];

export interface ConsentState {
  status: ConsentStatus;
  updatedAt: number;
  source: string;
}

export type ChannelIdentifiers = Partial<Record<Channel, string>>;
export type ConsentMap = Partial<Record<Channel, ConsentState>>;

/** Absent values are null (name, email, phone, lastSeenAt), [] (tags) or {} (channel maps). */
export interface EndUser {
  _id: string;
  name: string | null;
  email: string | null;
  phone: string | null;
  tags: string[];
  origin: Origin;
  channelIdentifiers: ChannelIdentifiers;
  consent: ConsentMap;
  createdAt: number;
  lastSeenAt: number | null;
  updatedAt: number;
}

export const isOrigin = (value: string): value is Origin => (ORIGINS as readonly string[]).includes(value);

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

export type AttributeValue = string | number | boolean;
export type Attributes = Record<string, AttributeValue>;
/** Attribute rules: at most 50 keys of [A-Za-z0-9_]{1,64}, strings of at most 1,000 characters. */
export const MAX_ATTRIBUTES = 50;
export const MAX_ATTRIBUTE_TEXT = 1000;
export const ATTRIBUTE_KEY = /^[A-Za-z0-9_]{1,64}$/;

export type ChannelIdentifiers = Partial<Record<Channel, string>>;
export type ConsentMap = Partial<Record<Channel, ConsentState>>;

/** Absent values are null (name, email, phone, lastSeenAt), [] (tags) or {} (channel maps, attributes). */
export interface EndUser {
  _id: string;
  name: string | null;
  email: string | null;
  phone: string | null;
  tags: string[];
  origin: Origin;
  channelIdentifiers: ChannelIdentifiers;
  consent: ConsentMap;
  attributes: Attributes;
  createdAt: number;
  lastSeenAt: number | null;
  updatedAt: number;
}

export const isOrigin = (value: string): value is Origin => (ORIGINS as readonly string[]).includes(value);

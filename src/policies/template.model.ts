/** A number's templates as the provider has them, and how a provider listing becomes one. */

export const TEMPLATE_CATEGORIES = ['MARKETING', 'UTILITY', 'AUTHENTICATION'] as const;
export type TemplateCategory = (typeof TEMPLATE_CATEGORIES)[number];

/** The statuses the issue names; the provider has a few more (IN_APPEAL, ...), kept as they come. */
export const TEMPLATE_STATUSES = ['APPROVED', 'PENDING', 'REJECTED', 'PAUSED', 'DISABLED'] as const;

export const HEADER_FORMATS = ['TEXT', 'IMAGE', 'VIDEO', 'DOCUMENT', 'LOCATION'] as const;

export interface TemplateButton {
  readonly type: string;
  readonly text: string;
}

export interface CatalogueTemplate {
  readonly name: string;
  readonly language: string;
  readonly category: string;
  readonly status: string;
  readonly header: { readonly format: string; readonly parameters: number } | null;
  readonly bodyParameters: number;
  readonly buttons: readonly TemplateButton[];
  readonly providerTemplateId: string | null;
  readonly updatedAt: number;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The distinct positional (`{{1}}`) or named (`{{name}}`) placeholders of a text. */
export function placeholderCount(text: unknown): number {
  if (typeof text !== 'string') return 0;
  const names = new Set<string>();
  for (const m of text.matchAll(/\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g)) names.add(m[1] ?? '');
  return names.size;
}

const clipped = (v: unknown, max: number): string | undefined =>
  typeof v === 'string' && v.length > 0 && v.length <= max ? v : undefined;

/**
 * One item of the provider's template listing (`GET /{waba}/message_templates`), or undefined when
 * it lacks a name or a language. A media header takes one parameter (the file); a text header as
 * many as its placeholders.
 */
export function templateOfProvider(item: unknown, at: number): CatalogueTemplate | undefined {
  if (!isObject(item)) return undefined;
  const name = clipped(item.name, 512);
  const language = clipped(item.language, 16);
  if (!name || !language) return undefined;
  const components = Array.isArray(item.components) ? item.components.filter(isObject) : [];
  const part = (type: string) => components.find((c) => String(c.type).toUpperCase() === type);
  const headerPart = part('HEADER');
  const format = headerPart ? String(headerPart.format ?? 'TEXT').toUpperCase() : undefined;
  const header = format
    ? { format, parameters: format === 'TEXT' ? placeholderCount(headerPart?.text) : format === 'LOCATION' ? 0 : 1 }
    : null;
  const buttonsPart = part('BUTTONS');
  const buttons = (Array.isArray(buttonsPart?.buttons) ? buttonsPart.buttons.filter(isObject) : []).map((b) => ({
    type: String(b.type ?? ''),
    text: String(b.text ?? ''),
  }));
  return {
    name,
    language,
    category: String(item.category ?? 'UTILITY').toUpperCase(),
    status: String(item.status ?? 'PENDING').toUpperCase(),
    header,
    bodyParameters: placeholderCount(part('BODY')?.text),
    buttons,
    providerTemplateId: typeof item.id === 'string' ? item.id : null,
    updatedAt: at,
  };
}

/** A template's key in a catalogue: name and language. */
export const templateKey = (name: string, language: string) => `${name}\u0000${language}`;

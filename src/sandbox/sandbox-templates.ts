import { randomInt } from 'node:crypto';
import type { SandboxTemplate } from '../config.js';

/**
 * The sandbox's business account's templates, as the provider keeps them: each with its category,
 * status and components. The built-in ones (sandbox-send-check.ts) and the configured ones
 * (PARLEY_SANDBOX_TEMPLATES) are `APPROVED`; one made through the create endpoint is `PENDING`
 * until its status is set (`parley sandbox template set-status`). The send checker reads the same
 * live list, so a paused template is refused as the provider refuses it.
 */
export interface SandboxCatalogueEntry extends SandboxTemplate {
  readonly id: string;
  readonly category: string;
  status: string;
  /** TEXT, IMAGE, ...; null without a header. */
  readonly headerFormat: string | null;
  readonly buttons: readonly { type: string; text: string }[];
}

/** What the sandbox knows of its built-in templates beyond their parameter counts. */
const KNOWN: Record<string, { category: string; headerFormat?: string; body?: number; header?: number }> = {
  hello_world: { category: 'UTILITY' },
  order_update: { category: 'UTILITY', headerFormat: 'TEXT' },
  promo_image: { category: 'MARKETING', headerFormat: 'IMAGE', header: 1, body: 1 },
  spring_sale: { category: 'MARKETING', body: 1 },
};

/** Templates of the account beside the send checker's built-in ones (kept here so both lists merge). */
const EXTRA: readonly SandboxTemplate[] = [
  { name: 'promo_image', language: 'en_US', header: 1, body: 1 },
  { name: 'spring_sale', language: 'en_US', header: 0, body: 1 },
];

const newTemplateId = () => `${randomInt(1, 10)}${String(randomInt(0, 1e9)).padStart(9, '0')}`;

export const TEMPLATE_STATUSES = ['APPROVED', 'PENDING', 'REJECTED', 'PAUSED', 'DISABLED'] as const;
export const TEMPLATE_CATEGORIES = ['MARKETING', 'UTILITY', 'AUTHENTICATION'] as const;

export class SandboxTemplates {
  /** Live: the send checker finds templates in it. */
  readonly entries: SandboxCatalogueEntry[] = [];

  constructor(builtIn: readonly SandboxTemplate[], configured: readonly SandboxTemplate[]) {
    for (const t of [...builtIn, ...EXTRA, ...configured]) {
      if (this.find(t.name, t.language)) continue;
      const known = KNOWN[t.name];
      this.entries.push({
        ...t,
        id: newTemplateId(),
        category: known?.category ?? 'UTILITY',
        status: 'APPROVED',
        headerFormat: known?.headerFormat ?? (t.header > 0 ? 'TEXT' : null),
        buttons: [],
      });
    }
  }

  find(name: string, language: string): SandboxCatalogueEntry | undefined {
    return this.entries.find((e) => e.name === name && e.language === language);
  }

  /** A new template, `PENDING`; a sentence when it cannot be made. */
  create(input: {
    name: string;
    language: string;
    category: string;
    body: number;
    header: number;
    headerFormat: string | null;
  }): SandboxCatalogueEntry | string {
    if (!/^[a-z0-9_]{1,512}$/.test(input.name)) return 'name must be lower-case letters, digits and _';
    if (!/^[a-z]{2,3}(_[A-Z]{2})?$/.test(input.language)) return 'language must be a code such as en_US';
    if (!(TEMPLATE_CATEGORIES as readonly string[]).includes(input.category)) {
      return `category must be one of ${TEMPLATE_CATEGORIES.join(', ')}`;
    }
    if (this.find(input.name, input.language)) return `template ${input.name} (${input.language}) already exists`;
    const entry: SandboxCatalogueEntry = {
      name: input.name,
      language: input.language,
      header: input.header,
      body: input.body,
      id: newTemplateId(),
      category: input.category,
      status: 'PENDING',
      headerFormat: input.headerFormat ?? (input.header > 0 ? 'TEXT' : null),
      buttons: [],
    };
    this.entries.push(entry);
    return entry;
  }

  /** The provider's listing of one template: its components, placeholders `{{n}}` standing for parameters. */
  static wire(e: SandboxCatalogueEntry): Record<string, unknown> {
    const placeholders = (n: number) => Array.from({ length: n }, (_, i) => `{{${i + 1}}}`).join(' ');
    const components: Record<string, unknown>[] = [];
    if (e.headerFormat === 'TEXT')
      components.push({ type: 'HEADER', format: 'TEXT', text: `Hi ${placeholders(e.header)}` });
    else if (e.headerFormat) components.push({ type: 'HEADER', format: e.headerFormat });
    components.push({ type: 'BODY', text: `Message ${placeholders(e.body)}`.trim() });
    if (e.buttons.length > 0) components.push({ type: 'BUTTONS', buttons: e.buttons });
    return {
      id: e.id,
      name: e.name,
      language: e.language,
      status: e.status,
      category: e.category,
      components,
    };
  }
}

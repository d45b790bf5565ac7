/** The tables of the policies that protect a number (migration 0050-template-catalogue). */

export interface NumberTemplateTable {
  number_id: string;
  org_id: string;
  name: string;
  language: string;
  category: string;
  status: string;
  /** TEXT, IMAGE, VIDEO, DOCUMENT, LOCATION; null without a header. */
  header_format: string | null;
  header_parameters: number;
  body_parameters: number;
  /** JSON array of the buttons as the provider lists them ({type, text}). */
  buttons: string;
  provider_template_id: string | null;
  updated_at: number;
}

export interface NumberAccountTable {
  number_id: string;
  org_id: string;
  /** The provider's business account whose templates the number sends; null: not known. */
  waba_id: string | null;
  /** 1 once the catalogue was read whole from the provider (a change bumps the key epoch; the time below does not). */
  catalogue_synced: number;
  /** When the catalogue was last read whole from the provider; null: never (sends fall back to the provider). */
  templates_synced_at: number | null;
  /** Why the last sync failed, if it did. */
  sync_error: string | null;
  quality: string | null;
  messaging_limit: string | null;
  health_updated_at: number | null;
}

export interface OrgConsentRulesTable {
  org_id: string;
  /** JSON arrays of upper-case words. */
  opt_out_keywords: string;
  opt_in_keywords: string;
  opt_out_reply: string | null;
  updated_at: number;
}

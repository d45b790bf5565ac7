import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { AppError } from '../shared/errors.js';
import { type Catalogue, readCatalogue } from './catalogue-read.js';
import { templateKey } from './template.model.js';

/** The fields of a template send the catalogue judges. */
interface TemplateAsked {
  readonly name: string;
  readonly language: string;
  readonly header?: readonly string[] | undefined;
  readonly body?: readonly string[] | undefined;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The catalogue's problem with a template (unknown, not approved) and with its parameter counts. */
export function catalogueProblems(
  catalogue: Catalogue,
  t: TemplateAsked,
): Partial<Record<'template' | 'parameters', string>> & { category?: string } {
  if (!catalogue.synced) return {};
  const label = `template ${t.name} (${t.language})`;
  const found = catalogue.templates.get(templateKey(t.name, t.language));
  if (!found) {
    const others = catalogue.languages.get(t.name);
    return {
      template: others
        ? `${label} does not exist on this agent's number; ${t.name} exists in ${others.join(', ')}`
        : `${label} does not exist on this agent's number`,
    };
  }
  if (found.status !== 'APPROVED') {
    return {
      category: found.category,
      template: `${label} is ${found.status}, not APPROVED, so the provider would refuse it`,
    };
  }
  const out: { parameters?: string; category: string } = { category: found.category };
  if (t.body && t.body.length !== found.bodyParameters) {
    out.parameters = `${label} expects ${plural(found.bodyParameters, 'body parameter')}, got ${t.body.length}`;
  } else if (t.header && found.header?.format === 'TEXT' && t.header.length !== found.header.parameters) {
    out.parameters = `${label} expects ${plural(found.header.parameters, 'header parameter')}, got ${t.header.length}`;
  } else if (t.header && !found.header && t.header.length > 0) {
    out.parameters = `${label} has no header, got ${plural(t.header.length, 'header parameter')}`;
  }
  return out;
}

/**
 * Creating a trigger or a campaign: its template checked against the number's catalogue (when
 * synced) as a send would be, with parameter counts when the caller gives parameters. Throws the
 * 400 of the first problem; an agent without a number, or a catalogue never synced, passes.
 */
export async function checkTemplateOfNumber(
  db: Kysely<DB>,
  input: {
    orgId: string;
    numberId: string | null;
    name: string;
    language: string;
    header?: readonly string[] | undefined;
    body?: readonly string[] | undefined;
  },
): Promise<void> {
  if (!input.numberId) return;
  const catalogue = await readCatalogue(db, input.orgId, input.numberId);
  const problems = catalogueProblems(catalogue, input);
  const problem = problems.template ?? problems.parameters;
  if (problem) throw new AppError('INVALID_BODY', problem);
}

/** The policies that protect a number: its template catalogue, opt-out, its health. */
export { type Catalogue, catalogueOf, templateCategory } from './catalogue.js';
export { readCatalogue } from './catalogue-read.js';
export type { CatalogueTemplate, TemplateCategory } from './template.model.js';
export { orgTemplateCategory } from './template-category.repository.js';
export { catalogueProblems, checkTemplateOfNumber } from './template-check.service.js';
export {
  consentProblem,
  enforceTemplateCatalogue,
  judgeTemplateSend,
  msgappConsentOf,
  policyRefusal,
  type TemplatePolicyDeps,
  type TemplateRule,
  type TemplateVerdict,
} from './template-policy.service.js';
export { SANDBOX_ACCOUNT } from './template-sync.service.js';

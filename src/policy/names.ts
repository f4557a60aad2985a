// A policy's `nameRule`, by the names ValidatingAdmissionPolicy's format library uses
// (`format.dns1123Label()`), resolved to annex's validators and Kubernetes' messages.
import type { NameRule } from '../admission/names/index.js';
import type { NameRuleName } from './types.js';

const RULES: Record<NameRuleName, NameRule> = {
  dns1123Subdomain: 'dns1123-subdomain',
  dns1123Label: 'dns1123-label',
  dns1035Label: 'dns1035-label',
  qualifiedName: 'qualified-name',
  labelKey: 'label-key',
  labelValue: 'label-value',
  pathSegment: 'path-segment',
};

export const NAME_RULES = Object.keys(RULES) as readonly NameRuleName[];

/** The validator behind a policy's name rule, or undefined for a name annex does not know. */
export function nameRuleFor(name: string): NameRule | undefined {
  return Object.hasOwn(RULES, name) ? RULES[name as NameRuleName] : undefined;
}

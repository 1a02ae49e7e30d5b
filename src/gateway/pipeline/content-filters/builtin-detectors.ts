import type { BuiltinFilterSlug } from '../../../admin/guardrails/builtin-filter-catalog.js';
import type { Detector } from './content-filter-types.js';
import { detectCreditCards } from './detectors/credit-card.js';
import { detectEmails } from './detectors/email.js';
import { detectIpAddresses } from './detectors/ip-address.js';
import { detectPersonNames } from './detectors/person-name.js';
import { detectPhoneNumbers } from './detectors/phone.js';
import { detectPromptInjection } from './detectors/prompt-injection.js';
import { detectSocialSecurityNumbers } from './detectors/ssn.js';
import { detectAddresses } from './detectors/street-address.js';

export const BUILTIN_DETECTORS: Readonly<Record<BuiltinFilterSlug, Detector>> = {
  'regex-prompt-injection': detectPromptInjection,
  email: detectEmails,
  phone: detectPhoneNumbers,
  ssn: detectSocialSecurityNumbers,
  'credit-card': detectCreditCards,
  'ip-address': detectIpAddresses,
  'person-name': detectPersonNames,
  address: detectAddresses,
};

/** The detectors that parse text with compromise and share the per-request NLP budget. */
export const LANGUAGE_SLUGS: ReadonlySet<BuiltinFilterSlug> = new Set(['person-name', 'address']);

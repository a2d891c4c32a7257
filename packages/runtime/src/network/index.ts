/** The SSRF guard: every outbound connection the gateway makes goes through `createGuardedAgent`. */
export {
  classifyAddress,
  compileAllowList,
  isAddressAllowed,
  parseAddress,
  parseCidr,
  type AddressCategory,
  type AllowList,
} from './addresses.js';
export { createGuardedAgent, findSsrfRefusal, ssrfRefusal, type GuardedAgentOptions } from './agent.js';
export { guardedFetchText, type FetchedText, type GuardedFetchOptions } from './fetch-text.js';
export { DOCUMENT_MAX_REDIRECTS, guardedDocumentFetcher, type DocumentFetcher } from './document-fetcher.js';

/**
 * @gateway/runtime: the Node-side state and I/O that the CLI and the server share. The CLI never imports the
 * server; both import this. Everything public is listed here.
 */
export {
  addressBucket,
  classifyAddress,
  compileAllowList,
  isAddressAllowed,
  isAddressInRanges,
  parseAddress,
  parseCidr,
  type AddressCategory,
  type AllowList,
} from './network/addresses.js';
export { createGuardedAgent, findSsrfRefusal, ssrfRefusal, type GuardedAgentOptions } from './network/agent.js';
export { guardedFetchText, type FetchedText, type GuardedFetchOptions } from './network/fetch-text.js';
export { exchange, isExchangeTimeout, ResponseTooLarge, type ExchangeOptions, type ExchangeResult } from './network/exchange.js';
export { Cancellation, toAbortSignal, type CancelSignal } from './network/cancellation.js';
export {
  createClientCredentialsGrant,
  DEFAULT_TOKEN_LIFETIME_MS,
  requestClientCredentialsToken,
  type ClientCredentialsGrant,
  type ClientCredentialsRequest,
  type ClientCredentialsToken,
} from './oauth/client-credentials.js';
export {
  createAuthorizationCodeClient,
  type AuthorizationCodeClient,
  type AuthorizationCodeClientOptions,
  type AuthorizationCodeProvider,
  type PersonTokenSet,
} from './oauth/authorization-code.js';
export { DOCUMENT_MAX_REDIRECTS, guardedDocumentFetcher, type DocumentFetcher } from './network/document-fetcher.js';
export {
  DEFAULT_LISTEN,
  defaultListen,
  LISTEN_ADDRESS_FIX,
  listenAddressProblem,
  listenAddressText,
  parseListen,
  probeListenAddress,
} from './network/listen-address.js';
export {
  createVault,
  environmentVariableFor,
  fileVaultPaths,
  isVaultReadOnly,
  referencedSecretNames,
  vaultIsWritable,
  type CreateVaultOptions,
  type SecretMetadata,
  type Vault,
} from './vault/index.js';
export {
  PeopleDirectory,
  checkPasswordStrength,
  checkPersonName,
  checkRoles,
  hashPassword,
  localSubject,
  PERSON_ROLES,
  verifyPassword,
  type LocalPerson,
  type PersonRole,
  type PersonSummary,
} from './people/directory.js';
export { gatewayDataDirectory, gatewayDatabasePath, peopleFilePath } from './paths.js';
export { describeDatabase, isPostgresUrl } from './database-location.js';
export { inTransaction, isRetryableTransactionError } from './postgres-transaction.js';
export { secretsEqual } from './constant-time.js';
export {
  bytesContainSecret,
  encodedForms,
  jsonTextContainsSecret,
  MIN_SECRET_LENGTH,
  NO_SECRETS,
  REDACTED,
  redactJsonValue,
  redactText,
  secretForms,
  textContainsSecret,
  type SecretForms,
} from './redaction.js';
export {
  diagnose,
  NOBODY_CAN_SIGN_IN,
  signInMethods,
  type DiagnoseOptions,
  type DoctorFinding,
  type DoctorReport,
  type FindingLevel,
} from './doctor.js';
export {
  DEFAULT_MCP_CONNECT_TIMEOUT_MS,
  DEFAULT_MCP_TOTAL_TIMEOUT_MS,
  connectMcpUpstream,
  createMcpToolLister,
  type McpTransportKind,
  type McpUpstreamConnection,
  type McpUpstreamOptions,
} from './mcp/client.js';

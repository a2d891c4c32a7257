/**
 * @gateway/core's public surface, spelled out: the domain (config, OpenAPI import, lock, proposals, signing,
 * verification, publishing, diff), the error registry and the admin API's wire contract. Only what the other
 * packages, the scripts and the benchmarks use is listed; add a name here when another package needs it.
 */
export {
  CATEGORY_MEANINGS,
  ERROR_AREAS,
  ERRORS,
  EXIT_CODES,
  GatewayError,
  isErrorCode,
  isGatewayError,
  type ErrorArea,
  type ErrorCategory,
  type ErrorCode,
  type ErrorSpec,
} from './errors.js';
export { renderErrorDocs } from './error-docs.js';
export { OPERATORS_APPROVER } from './model.js';
export type {
  JsonSchema,
  LockedOperation,
  LockedSource,
  Lockfile,
  NotOfferedEntry,
  Operation,
  OperationBody,
  OperationParameter,
  Publication,
  SecurityRequirement,
  SecuritySchemeSummary,
} from './model.js';
export { canonicalDigest, canonicalJson, sha256Digest } from './canonical.js';
export { compareText } from './compare-text.js';
export {
  emptyLock,
  findSource,
  inUsePublication,
  proposedPublication,
  parseLock,
  readLockFile,
  serialiseLock,
  writeFileAtomically,
  writeLockFile,
} from './lockfile.js';
export { createAjv, describeSchemaErrors, type ValidateFunction } from './json-schema-validator.js';
export {
  canonicalMcpUrl,
  configSchema,
  DEFAULT_POSTGRES_POOL_SIZE,
  isLoopbackHostname,
  loadConfig,
  parseConfig,
  personCredentialsOf,
  resolveConfigPath,
  sourceConfig,
  type AuthConfig,
  type CredentialConfig,
  type OAuthPersonCredentialConfig,
  type LoadedConfig,
  type StorageConfig,
  type StorageKind,
} from './config/index.js';
export {
  applyImport,
  draftProposal,
  type DraftProposal,
  type ImportedOperations,
  applySelection,
  describeSelectionChange,
  globExpression,
  requireProposal,
  setSelection,
  type ImportSummary,
  type SelectionChange,
} from './proposal.js';
export {
  generatePublisherKeyPair,
  keyFileText,
  keyIdOf,
  parsePrivateJwk,
  parsePublicJwk,
  publicJwkOf,
  readPrivateKeyFile,
  readPublicKeyFile,
  type PrivateKeyJwk,
} from './keys.js';
export { checkPublicationSignature, publicationSigningPayload, signPublication, type TrustedKey } from './signing.js';
export {
  loadTrustedKeys,
  loadVerifiedLock,
  verifiedLockFrom,
  verifyLock,
  verifyLockFile,
  type VerificationProblem,
  type VerificationReport,
  type VerifiedLock,
} from './verify.js';
export { publishProposal, type LiveDescription, type PublishRequest } from './publish.js';
export {
  addedNote,
  describeOperationChanges,
  describeToolChanges,
  DOCUMENTATION_ONLY_NOTE,
  EACH_CALL_NOTE,
  operationLabel,
  REMOVED_NOTE,
  diffOperations,
  describeDiffInWords,
  diffSource,
  importLiveSource,
  schemaTypeLabel,
  type ChangedOperation,
  type OperationSummary,
  type SourceDiff,
} from './diff.js';
export type {
  AdminDriftCheck,
  AdminReceiptList,
  AdminReceiptProof,
  AdminSession,
  AdminSessionAnswer,
  AdminLinkedAccount,
  AdminLinkedAccountList,
  AdminUnlinkAnswer,
  AdminSessionList,
  AdminStatus,
  AdminWebhookDelivery,
  AdminWebhookDeliveryList,
  AdminWebhookDeliveryStatus,
  AdminWebhookEndpoint,
  AdminWebhookEndpointList,
  AdminWebhookReplay,
  AdminWebhookResume,
  AdminWebhookState,
  AdminWebhookTest,
  DriftSourceReport,
  DriftStatus,
  LockReloadStatus,
} from './admin-api.js';
export {
  DEFAULT_MAX_DOCUMENT_BYTES,
  fingerprintOf,
  importOpenApi,
  importOpenApiText,
  UNSUPPORTED_REASON_CODES,
  type ImportedDocument,
} from './openapi/index.js';
export {
  keyedDigest,
  receiptCanonicalJson,
  receiptLeafBytes,
  receiptLeafText,
  receiptOf,
  type ConsoleActionName,
  type Receipt,
  type ReceiptAction,
  type ReceiptOutcome,
} from './receipt.js';
export {
  appendLeavesToEdge,
  appendToEdge,
  consistencyProof,
  consistencyProofFromEdge,
  inclusionProof,
  leafHash,
  nodeHash,
  rootOf,
  rootOfEdge,
  verifyConsistency,
  verifyInclusion,
} from './merkle.js';
export {
  formatCheckpoint,
  noteKeyId,
  parseCheckpoint,
  parseVerifierKey,
  privateKeyFromPem,
  publicKeyFromRaw,
  rawPublicKey,
  signNote,
  verifierKey,
  verifyCheckpointNote,
  verifyNote,
  type Checkpoint,
} from './checkpoint.js';
export { receiptProofHolds } from './receipt-proof.js';
export {
  chooseLoginAlternative,
  decideCall,
  loginAlternativesOf,
  loginIdOf,
  MCP_LOGIN_SCHEME,
  mcpLoginAlternatives,
  type CallDenialReason,
  type CallFacts,
  type CallVerdict,
  type LoginAlternative,
  type PendingPersonAction,
  type PersonAction,
  type PersonActionReason,
  type SessionState,
} from './policy.js';
export { openRequestState, sealRequestState, type OpenedRequestState, type RequestStateClaims } from './request-state.js';
export {
  RECEIPTS_SIGNING_KEY_SECRET,
  receiptOrigin,
  trustedReceiptKeys,
  verifyReceiptLog,
  type CollectedCheckpoint,
  type LogEntryCheckpoint,
  type LogEntryReceipt,
  type LogVerification,
} from './receipt-log-verify.js';
export {
  MAX_DESCRIPTION_LENGTH,
  TOOL_TEXT_REASON_CODES,
  escapeHiddenCharacters,
  escapeHiddenCharactersInJson,
  escapedCodePoint,
  hasHiddenCharacters,
  hiddenCharactersIn,
  hiddenCharactersInValue,
  toolTextProblem,
  type ToolTextReasonCode,
} from './tool-text.js';
export {
  MCP_TOOL_NAME_PATTERN,
  MCP_UNSUPPORTED_REASON_CODES,
  MCP_TOOL_PREFIX_SEPARATOR,
  mcpFingerprintOf,
  mcpGatewayToolName,
  normaliseMcpTool,
  normaliseMcpTools,
  type ImportedMcpTools,
  type ListedMcpTool,
  type McpToolShape,
} from './mcp/index.js';
export {
  compareEntries,
  describeEntry,
  describeNotOffered,
  entryFingerprint,
  fingerprintCoverage,
} from './source-kinds.js';
export {
  type McpCredentialConfig,
  type McpSourceConfig,
  type McpSourceCredentialConfig,
  type SettingSource,
  sourceLocation,
  type VaultProvider,
  WRITABLE_VAULT_PROVIDERS,
} from './config/load.js';
export { DEFAULT_CHECKPOINT_EVERY_RECEIPTS, DEFAULT_CHECKPOINT_EVERY_SECONDS } from './config/receipts-schema.js';
export { DEFAULT_TRACES_SERVICE_NAME, type TelemetryConfig } from './config/telemetry-schema.js';
export {
  APPROVAL_EVENT_TYPE,
  CHECKPOINT_EVENT_TYPE,
  CONSOLE_EVENT_TYPE,
  DEFAULT_WEBHOOK_EVENT_TYPES,
  RECEIPT_EVENT_TYPE,
  WEBHOOK_EVENT_TYPES,
  WEBHOOK_RETRY_DEFAULTS,
  type WebhookDataMode,
  type WebhookEndpointConfig,
  type WebhookEventType,
  type WebhookExhaustedAction,
} from './config/webhooks-schema.js';
export { type LiveImportOptions, type McpToolLister, otherSourcesToolNames } from './diff.js';
export { validatableSchema } from './json-schema-validator.js';
export { STALE_TEMPORARY_MS, nestingDepth } from './lockfile.js';
export type { BodyEncoding, LockedEntry, LockedMcpTool, McpLockedSource, McpTool, OpenApiLockedSource } from './model.js';
export { type FetchText, MAX_DOCUMENT_DEPTH, decodeDocumentBytes, parseDocumentText } from './openapi/load.js';
export { stringifyExact, withDoubles } from './exact-integers.js';

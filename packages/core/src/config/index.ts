/** The config area: gateway.yaml's schema, loading and the helpers other modules need from it. */
export {
  configSchema,
  credentialSchema,
  mcpCredentialSchema,
  mcpOwnCredentialSchema,
  mcpSourceSchema,
  openApiSourceSchema,
  sourceSchema,
  vaultSchema,
} from './schema.js';
export {
  canonicalMcpUrl,
  isLoopbackHostname,
  loadConfig,
  parseConfig,
  personCredentialsOf,
  resolveConfigPath,
  sourceConfig,
  sourceLocation,
  type CredentialConfig,
  type GatewayConfig,
  type LoadedConfig,
  type McpCredentialConfig,
  type OAuthPersonCredentialConfig,
  type McpSourceConfig,
  type McpSourceCredentialConfig,
  type OpenApiSourceConfig,
  type SourceConfig,
} from './load.js';
export {
  authSchema,
  type AuthConfig,
} from './auth-schema.js';
export {
  DEFAULT_CHECKPOINT_EVERY_RECEIPTS,
  DEFAULT_CHECKPOINT_EVERY_SECONDS,
  receiptsSchema,
  type ReceiptsConfig,
} from './receipts-schema.js';
export { DEFAULT_POSTGRES_POOL_SIZE, storageSchema, type StorageConfig, type StorageKind } from './storage-schema.js';
export { DEFAULT_TRACES_SERVICE_NAME, telemetrySchema, type TelemetryConfig } from './telemetry-schema.js';
export {
  APPROVAL_EVENT_TYPE,
  CHECKPOINT_EVENT_TYPE,
  CONSOLE_EVENT_TYPE,
  DEFAULT_WEBHOOK_EVENT_TYPES,
  RECEIPT_EVENT_TYPE,
  WEBHOOK_EVENT_TYPES,
  WEBHOOK_RETRY_DEFAULTS,
  webhooksSchema,
  type WebhookDataMode,
  type WebhookEndpointConfig,
  type WebhookEventType,
  type WebhookExhaustedAction,
  type WebhookOutcome,
  type WebhooksConfig,
} from './webhooks-schema.js';

/** The config area: gateway.yaml's schema, loading and the helpers other modules need from it. */
export { configSchema } from './schema.js';
export { canonicalMcpUrl, isLoopbackHostname, loadConfig, parseConfig, resolveConfigPath, sourceConfig, type CredentialConfig, type LoadedConfig } from './load.js';
export type { AuthConfig } from './auth-schema.js';

import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { LineCounter, parseDocument, isNode } from 'yaml';
import { GatewayError } from '../errors.js';
import { createAjv, type ValidateFunction } from '../json-schema-validator.js';
import type { ServerOverride } from '../model.js';
import { MCP_LOGIN_SCHEME } from '../policy.js';
import { configSchema } from './schema.js';

export type CredentialConfig =
  | { type: 'none' }
  | { type: 'apiKey' | 'bearer'; secret: string }
  | { type: 'basic'; username: string; secret: string }
  | { type: 'oauthClientCredentials'; clientId: string; secret: string; tokenUrl?: string; scopes?: string[] }
  | OAuthPersonCredentialConfig;

/**
 * OAuth per person (docs/config.md › Credentials): each person links their own account at the provider (the
 * authorization code flow with PKCE); calls carry that person's access token. The provider comes from
 * `issuer` (RFC 8414 / OpenID discovery), or from `authorizationUrl` and `tokenUrl` when it publishes no metadata.
 */
export interface OAuthPersonCredentialConfig {
  type: 'oauthPerson';
  issuer?: string;
  authorizationUrl?: string;
  tokenUrl?: string;
  clientId: string;
  /** Vault name of the client secret. */
  secret: string;
  scopes?: string[];
  /** RFC 8707 resource indicator sent in the authorization and token requests. */
  resource?: string;
  /** What the consent page names the provider ("Connect <label>"); default the issuer's host. */
  label?: string;
}

export interface OpenApiSourceConfig {
  kind: 'openapi';
  document: string;
  allowRemoteRefs?: boolean;
  /** Replaces the document's servers for calls: a URL, or values for the document's server variables. */
  server?: ServerOverride;
  credentials?: Record<string, CredentialConfig>;
  timeouts?: { connectMs?: number; totalMs?: number };
  maxResponseBytes?: number;
}

export type McpCredentialConfig =
  | { type: 'none' }
  | { type: 'bearer'; secret: string }
  | { type: 'apiKey'; header: string; secret: string }
  | { type: 'oauthClientCredentials'; clientId: string; secret: string; tokenUrl: string; scopes?: string[] };

/** An MCP source's `credentials`: one of the gateway's own (the same on every call), or each person's own (`oauthPerson`). */
export type McpSourceCredentialConfig = McpCredentialConfig | OAuthPersonCredentialConfig;

/** An MCP server as a source: exactly one of `command` (stdio, connected) or `url` (HTTP, external). */
export interface McpSourceConfig {
  kind: 'mcp';
  command?: string[];
  env?: Record<string, { secret: string }>;
  url?: string;
  credentials?: McpSourceCredentialConfig;
  /**
   * With `credentials` of type `oauthPerson`: the gateway's own credential for listing tools (import, diff, the
   * rug-pull defence), never sent on a call.
   */
  listingCredentials?: McpCredentialConfig;
  /** PEM files of extra CAs trusted for this source's `url` (a private or test CA), besides the public roots. */
  caCertificates?: string[];
  timeouts?: { connectMs?: number; totalMs?: number };
  maxResponseBytes?: number;
  relistIntervalSeconds?: number;
}

export type SourceConfig = OpenApiSourceConfig | McpSourceConfig;

/** Where the vault keeps secrets: `file` (the embedded default), `env`, `exec` (read-only), `postgres` (shared by replicas). */
export type VaultProvider = 'file' | 'env' | 'exec' | 'postgres';

/** The providers `set` and `delete` work on (what a per-person login's tokens need). */
export const WRITABLE_VAULT_PROVIDERS: readonly VaultProvider[] = ['file', 'postgres'];

/**
 * A setting read from outside the vault (it cannot come from the vault it opens): an environment variable, a file
 * (relative to gateway.yaml) or the stdout of a command (argv, run without a shell).
 */
export type SettingSource = { env: string } | { file: string } | { exec: string[]; timeoutMs?: number };

export interface GatewayConfig {
  gateway: {
    url: string;
    listen?: string;
    tls?: { cert: string; key: string };
    allowedOrigins?: string[];
    dataDirectory?: string;
    maxRequestBytes?: number;
    /** Reverse proxies (addresses or CIDR ranges) whose `X-Forwarded-For` names the client's address. */
    trustedProxies?: string[];
  };
  sources: Record<string, SourceConfig>;
  trust?: { keys?: string[] };
  import?: { maxDocumentBytes?: number; timeoutMs?: number };
  network?: { allowPrivateNetworks?: string[] };
  vault?: {
    provider?: VaultProvider;
    file?: { path?: string; keyEnv?: string; keyFile?: string };
    env?: { prefix?: string };
    exec?: { command: string[]; timeoutMs?: number };
    postgres?: { url: SettingSource; key: SettingSource; previousKeys?: SettingSource[] };
  };
  storage?: import('./storage-schema.js').StorageConfig;
  admin?: { tokenSecret?: string };
  drift?: { intervalSeconds?: number; enabled?: boolean };
  approvals?: { expirySeconds?: number };
  auth?: import('./auth-schema.js').AuthConfig;
  receipts?: import('./receipts-schema.js').ReceiptsConfig;
  webhooks?: import('./webhooks-schema.js').WebhooksConfig;
  telemetry?: import('./telemetry-schema.js').TelemetryConfig;
}

/** A validated configuration and where it came from. */
export interface LoadedConfig {
  /** Absolute path of the file. */
  path: string;
  /** Directory relative paths in the file are resolved against. */
  directory: string;
  config: GatewayConfig;
}

// Compiled on first use, not at import.
let configValidator: ValidateFunction | undefined;
function validateConfig(value: unknown): ValidateFunction {
  configValidator ??= createAjv().compile(configSchema);
  configValidator(value);
  return configValidator;
}

function valueAt(root: unknown, segments: readonly string[]): unknown {
  let current = root;
  for (const segment of segments)
    current = current !== null && typeof current === 'object' ? (current as Record<string, unknown>)[segment] : undefined;
  return current;
}

/**
 * For a `const`/`enum` failure inside a oneOf branch (schemaPath `#/…/oneOf/<i>/properties/<p>/const`), every
 * value that property may take in any branch; undefined outside a oneOf.
 */
function allowedAcrossBranches(schemaPath: string): unknown[] | undefined {
  const match = /^#\/(.*)\/oneOf\/\d+\/properties\/([^/]+)\/(?:const|enum)$/.exec(schemaPath);
  if (!match) return undefined;
  let node: unknown = configSchema;
  for (const part of match[1]!.split('/'))
    node = (node as Record<string, unknown> | undefined)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  const branches = (node as { oneOf?: Array<{ properties?: Record<string, { const?: unknown; enum?: unknown[] }> }> } | undefined)?.oneOf;
  if (!branches) return undefined;
  const values = branches.flatMap((branch) => {
    const property = branch.properties?.[match[2]!];
    return property?.enum ?? (property && 'const' in property ? [property.const] : []);
  });
  return [...new Set(values)];
}

/** Parses and validates gateway.yaml text; errors name the key and its line. */
export function parseConfig(text: string, path: string): LoadedConfig {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, prettyErrors: true, uniqueKeys: true });
  if (document.errors.length > 0) {
    const first = document.errors[0]!;
    const line = first.linePos?.[0]?.line;
    throw new GatewayError('CONFIG_INVALID_YAML', `${path}${line ? `:${line}` : ''}: not valid YAML: ${first.message.split('\n')[0]}`, {
      details: { line },
    });
  }
  const value: unknown = document.toJS({ maxAliasCount: 50 });
  const validator = validateConfig(value);
  if (validator.errors) {
    // A oneOf branch whose discriminator (`kind`, `type`) does not match is not what the author meant: its
    // other complaints (missing or unknown keys of that branch) are noise.
    const mismatchedBranches = validator.errors
      .filter((error) => error.keyword === 'const' || error.keyword === 'enum')
      .map((error) => /^(.*\/oneOf\/\d+)\/properties\/[^/]+\/(?:const|enum)$/.exec(error.schemaPath)?.[1])
      .filter((prefix): prefix is string => prefix !== undefined);
    const relevant = validator.errors.filter(
      (error) =>
        error.keyword === 'const' ||
        error.keyword === 'enum' ||
        !mismatchedBranches.some((prefix) => error.schemaPath.startsWith(`${prefix}/`)),
    );
    const problems = relevant.flatMap((error) => {
      if (error.keyword === 'if') return []; // its `then` branch reports the actual problem
      const segments = error.instancePath
        .split('/')
        .slice(1)
        .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'));
      let key = segments.join('.');
      let message = error.message ?? 'is invalid';
      if (error.keyword === 'additionalProperties') {
        const property = String((error.params as { additionalProperty?: string }).additionalProperty);
        segments.push(property);
        key = segments.join('.');
        message = 'unknown key';
      } else if (error.keyword === 'required') {
        message = `missing required key '${String((error.params as { missingProperty?: string }).missingProperty)}'`;
      } else if (error.keyword === 'enum' || error.keyword === 'const') {
        // Inside a oneOf, name every value any branch accepts (`kind`, credential `type`), not one branch's.
        const allowed = allowedAcrossBranches(error.schemaPath) ?? [
          ...(error.keyword === 'enum'
            ? ((error.params as { allowedValues?: unknown[] }).allowedValues ?? [])
            : [(error.params as { allowedValue?: unknown }).allowedValue]),
        ];
        const actual = valueAt(value, segments);
        message = allowed.length === 1 ? `must be ${JSON.stringify(allowed[0])}` : `must be one of ${JSON.stringify(allowed)}`;
        // A value some other branch accepts is not the problem: that branch's own complaint is.
        if (allowed.some((candidate) => candidate === actual)) return [];
      }
      const node = document.getIn(segments, true);
      const offset = isNode(node) && node.range ? node.range[0] : undefined;
      const line = offset === undefined ? undefined : lineCounter.linePos(offset).line;
      return [{ key: key || '(root)', line, message }];
    });
    // oneOf failures repeat once per branch: keep the most specific, deduplicated. A value that matches no
    // branch's discriminator (`kind`, `type`) is the real problem: it goes first, with every allowed value.
    const unique = [...new Map(problems.map((problem) => [`${problem.key}|${problem.message}`, problem])).values()].sort(
      (left, right) => Number(right.message.startsWith('must be one of')) - Number(left.message.startsWith('must be one of')),
    );
    const first = unique[0]!;
    throw new GatewayError(
      'CONFIG_INVALID',
      `${path}${first.line ? `:${first.line}` : ''}: ${first.key}: ${first.message}` +
        (unique.length > 1 ? ` (and ${unique.length - 1} more problem${unique.length > 2 ? 's' : ''})` : ''),
      { details: { problems: unique } },
    );
  }
  const config = value as unknown as GatewayConfig;
  checkGatewayUrl(config.gateway.url, path);
  for (const [name, source] of Object.entries(config.sources)) if (source.kind === 'mcp') checkMcpSource(name, source, path);
  checkPersonLogins(config, path);
  return { path, directory: dirname(path), config };
}

function checkGatewayUrl(url: string, path: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new GatewayError('CONFIG_INVALID', `${path}: gateway.url: not an absolute URL: ${url}`);
  }
  if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && isLoopbackHostname(parsed.hostname))) {
    throw new GatewayError('CONFIG_INVALID', `${path}: gateway.url: must be https (plain http is allowed only for loopback hosts): ${url}`);
  }
  if (parsed.search || parsed.hash) {
    throw new GatewayError('CONFIG_INVALID', `${path}: gateway.url: must not carry a query or fragment`);
  }
}

/** The rules of an MCP source the schema cannot say well: one transport, http only on loopback. */
function checkMcpSource(name: string, source: McpSourceConfig, path: string): void {
  const where = `${path}: sources.${name}`;
  if ((source.command === undefined) === (source.url === undefined)) {
    throw new GatewayError('CONFIG_INVALID', `${where}: an mcp source needs exactly one of 'command' (stdio) or 'url' (Streamable HTTP)`, {
      details: { source: name },
    });
  }
  if (source.command !== undefined && source.credentials !== undefined) {
    throw new GatewayError('CONFIG_INVALID', `${where}.credentials: only for 'url' sources; a stdio server gets secrets through 'env'`, {
      details: { source: name },
    });
  }
  if (source.listingCredentials !== undefined && source.credentials?.type !== 'oauthPerson') {
    throw new GatewayError(
      'CONFIG_INVALID',
      `${where}.listingCredentials: only beside credentials of type oauthPerson; the source's own credentials list its tools`,
      { details: { source: name } },
    );
  }
  if (source.command !== undefined && source.caCertificates !== undefined) {
    throw new GatewayError('CONFIG_INVALID', `${where}.caCertificates: only for 'url' sources; a stdio server is not reached over TLS`, {
      details: { source: name },
    });
  }
  if (source.url !== undefined) {
    if (source.env !== undefined) {
      throw new GatewayError('CONFIG_INVALID', `${where}.env: only for 'command' (stdio) sources; an HTTP endpoint gets 'credentials'`, {
        details: { source: name },
      });
    }
    let parsed: URL;
    try {
      parsed = new URL(source.url);
    } catch {
      throw new GatewayError('CONFIG_INVALID', `${where}.url: not an absolute URL: ${source.url}`);
    }
    if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && isLoopbackHostname(parsed.hostname))) {
      throw new GatewayError(
        'CONFIG_INVALID',
        `${where}.url: must be https (plain http is allowed only for loopback hosts): ${source.url}`,
      );
    }
  }
}

/**
 * A per-person login names its provider by `issuer` or by both endpoint URLs, and keeps each person's tokens in
 * the vault, so it needs a vault that can store them (`file` or `postgres`; `env` and `exec` only read).
 */
function checkPersonLogins(config: GatewayConfig, path: string): void {
  const provider = config.vault?.provider ?? 'file';
  for (const [sourceName, source] of Object.entries(config.sources)) {
    for (const { key, credential } of personCredentialsOf(source)) {
      const where = `${path}: sources.${sourceName}.${key}`;
      const hasEndpoints = credential.authorizationUrl !== undefined && credential.tokenUrl !== undefined;
      if ((credential.issuer === undefined) === !hasEndpoints) {
        throw new GatewayError(
          'CONFIG_INVALID',
          `${where}: an oauthPerson login needs either 'issuer' (discovery) or both 'authorizationUrl' and 'tokenUrl'`,
          { details: { source: sourceName, key } },
        );
      }
      if (!WRITABLE_VAULT_PROVIDERS.includes(provider)) {
        throw new GatewayError(
          'PERSON_LOGIN_VAULT_READ_ONLY',
          `${where}: an oauthPerson login keeps each person's tokens in the vault, and the '${provider}' vault is read-only; ` +
            "set vault.provider to 'file' (the default) or 'postgres' (several replicas), or give it a credential of the gateway's own " +
            (source.kind === 'mcp' ? '(bearer, apiKey, oauthClientCredentials)' : '(oauthClientCredentials, bearer)'),
          { details: { source: sourceName, key, vault: provider } },
        );
      }
    }
  }
}

/** A per-person credential of a source: where it stands in gateway.yaml and the scheme its login id names. */
export interface PersonCredentialEntry {
  /** `credentials.<scheme>` (OpenAPI) or `credentials` (MCP). */
  key: string;
  /** The OpenAPI security scheme, or `mcp` (MCP_LOGIN_SCHEME): the login is `<source>/<scheme>`. */
  scheme: string;
  credential: OAuthPersonCredentialConfig;
}

/** The `oauthPerson` credentials of a source: an OpenAPI source's per security scheme, an MCP source's one. */
export function personCredentialsOf(source: SourceConfig): PersonCredentialEntry[] {
  if (source.kind === 'mcp') {
    const credential = source.credentials;
    return credential?.type === 'oauthPerson' ? [{ key: 'credentials', scheme: MCP_LOGIN_SCHEME, credential }] : [];
  }
  const found: PersonCredentialEntry[] = [];
  for (const [scheme, credential] of Object.entries(source.credentials ?? {})) {
    if (credential.type === 'oauthPerson') found.push({ key: `credentials.${scheme}`, scheme, credential });
  }
  return found;
}

/** The location a lock records for a source (its `document`): the document, the URL, or `stdio:` + the argv as JSON. */
export function sourceLocation(source: SourceConfig): string {
  switch (source.kind) {
    case 'openapi':
      return source.document;
    case 'mcp':
      return source.url ?? `stdio:${JSON.stringify(source.command ?? [])}`;
  }
}

/** True for localhost, 127.0.0.0/8 and ::1. */
export function isLoopbackHostname(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** Reads and validates a gateway.yaml file. */
export async function loadConfig(path: string): Promise<LoadedConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new GatewayError('CONFIG_NOT_FOUND', `no configuration at ${path}; run \`gateway init\` or pass --config`);
    }
    throw new GatewayError('CONFIG_UNREADABLE', `cannot read ${path}: ${(error as Error).message}`);
  }
  return parseConfig(text, path);
}

/** Resolves a path written in the config against the config's directory. */
export function resolveConfigPath(loaded: LoadedConfig, path: string): string {
  return isAbsolute(path) ? path : resolve(loaded.directory, path);
}

/** The canonical `/mcp` URL of this gateway (no trailing slash games: exactly `<url>/mcp`). */
export function canonicalMcpUrl(config: GatewayConfig): string {
  return `${config.gateway.url.replace(/\/+$/, '')}/mcp`;
}

export function sourceConfig(loaded: LoadedConfig, name: string): SourceConfig {
  const source = loaded.config.sources[name];
  if (!source) {
    const known = Object.keys(loaded.config.sources);
    throw new GatewayError(
      'SOURCE_UNKNOWN',
      `no source named '${name}' in ${loaded.path}${known.length ? ` (known: ${known.join(', ')})` : ''}`,
    );
  }
  return source;
}

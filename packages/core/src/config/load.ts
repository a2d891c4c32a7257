import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { LineCounter, parseDocument, isNode } from 'yaml';
import { GatewayError } from '../errors.js';
import { createAjv, type ValidateFunction } from '../json-schema-validator.js';
import { configSchema } from './schema.js';

export type CredentialConfig =
  | { type: 'none' }
  | { type: 'apiKey' | 'bearer'; secret: string }
  | { type: 'basic'; username: string; secret: string }
  | { type: 'oauthClientCredentials'; clientId: string; secret: string; tokenUrl?: string; scopes?: string[] };

export interface SourceConfig {
  kind: 'openapi';
  document: string;
  allowRemoteRefs?: boolean;
  credentials?: Record<string, CredentialConfig>;
  timeouts?: { connectMs?: number; totalMs?: number };
  maxResponseBytes?: number;
}

export interface GatewayConfig {
  gateway: {
    url: string;
    listen?: string;
    tls?: { cert: string; key: string };
    allowedOrigins?: string[];
    dataDirectory?: string;
    maxRequestBytes?: number;
  };
  sources: Record<string, SourceConfig>;
  trust?: { keys?: string[] };
  import?: { maxDocumentBytes?: number; timeoutMs?: number };
  network?: { allowPrivateNetworks?: string[] };
  vault?: {
    provider?: 'file' | 'env' | 'exec';
    file?: { path?: string; keyEnv?: string; keyFile?: string };
    env?: { prefix?: string };
    exec?: { command: string[]; timeoutMs?: number };
  };
  admin?: { tokenSecret?: string };
  drift?: { intervalSeconds?: number; enabled?: boolean };
  auth?: import('./auth-schema.js').AuthConfig;
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

/** Parses and validates gateway.yaml text; errors name the key and its line. */
export function parseConfig(text: string, path: string): LoadedConfig {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, prettyErrors: true, uniqueKeys: true });
  if (document.errors.length > 0) {
    const first = document.errors[0]!;
    const line = first.linePos?.[0]?.line;
    throw new GatewayError(
      'CONFIG_INVALID_YAML',
      `${path}${line ? `:${line}` : ''}: not valid YAML: ${first.message.split('\n')[0]}`,
      { details: { line } },
    );
  }
  const value: unknown = document.toJS({ maxAliasCount: 50 });
  const validator = validateConfig(value);
  if (validator.errors) {
    const problems = validator.errors.map((error) => {
      const segments = error.instancePath.split('/').slice(1).map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'));
      let key = segments.join('.');
      let message = error.message ?? 'is invalid';
      if (error.keyword === 'additionalProperties') {
        const property = String((error.params as { additionalProperty?: string }).additionalProperty);
        segments.push(property);
        key = segments.join('.');
        message = 'unknown key';
      } else if (error.keyword === 'required') {
        message = `missing required key '${String((error.params as { missingProperty?: string }).missingProperty)}'`;
      } else if (error.keyword === 'enum') {
        message = `must be one of ${JSON.stringify((error.params as { allowedValues?: unknown }).allowedValues)}`;
      }
      const node = document.getIn(segments, true);
      const offset = isNode(node) && node.range ? node.range[0] : undefined;
      const line = offset === undefined ? undefined : lineCounter.linePos(offset).line;
      return { key: key || '(root)', line, message };
    });
    // oneOf failures repeat once per branch: keep the most specific, deduplicated.
    const unique = [...new Map(problems.map((problem) => [`${problem.key}|${problem.message}`, problem])).values()];
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
    throw new GatewayError(
      'CONFIG_INVALID',
      `${path}: gateway.url: must be https (plain http is allowed only for loopback hosts): ${url}`,
    );
  }
  if (parsed.search || parsed.hash) {
    throw new GatewayError('CONFIG_INVALID', `${path}: gateway.url: must not carry a query or fragment`);
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

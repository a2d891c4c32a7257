/**
 * A connection to an upstream MCP server, shared by the CLI (import, diff, publish list its tools) and the
 * server (it forwards calls and re-lists for drift). Transports: stdio for a connected server (`command`),
 * Streamable HTTP for an endpoint (`url`), falling back to the older HTTP+SSE transport when that is all the
 * endpoint speaks. Every HTTP request goes through the SSRF-guarded agent; credentials come from the vault
 * and are set by the gateway on each request, so nothing a client of the gateway sent can reach the upstream.
 */
// Types only: the SDK itself is loaded by connectMcpUpstream on the first connection, so a gateway without an
// MCP source (and every CLI command that lists no MCP tools) never loads it (docs/server.md, "Memory").
import type { Client, FetchLike, Transport } from '@modelcontextprotocol/client';
import { readFile } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import { fetch as undiciFetch, type Dispatcher } from 'undici';
import {
  GatewayError,
  type ListedMcpTool,
  type LoadedConfig,
  type McpCredentialConfig,
  type McpSourceConfig,
  type McpToolLister,
} from '@gateway/core';
import { createGuardedAgent, findSsrfRefusal } from '../network/agent.js';
import { requestClientCredentialsToken } from '../oauth/client-credentials.js';
import { jsonTextContainsSecret, NO_SECRETS, redactJsonValue, redactText, secretForms, type SecretForms } from '../redaction.js';
import type { Vault } from '../vault/index.js';

export const DEFAULT_MCP_CONNECT_TIMEOUT_MS = 10_000;
export const DEFAULT_MCP_TOTAL_TIMEOUT_MS = 30_000;
/** tools/list pages followed before giving up (a server whose cursor never ends must not hang an import). */
export const MAX_MCP_LIST_PAGES = 100;

export type McpTransportKind = 'stdio' | 'streamable-http' | 'sse';

export interface McpUpstreamOptions {
  sourceName: string;
  source: McpSourceConfig;
  /** Where a stdio server runs (relative paths in `command` resolve against it): gateway.yaml's directory. */
  baseDirectory: string;
  vault: Vault;
  /** The guarded agent; one is made from allowPrivateNetworks when absent. */
  agent?: Dispatcher;
  allowPrivateNetworks?: readonly string[];
  /** A stdio server's stderr, secrets already redacted. */
  onStderr?: (text: string) => void;
  /** The upstream sent notifications/tools/list_changed. */
  onToolListChanged?: () => void;
  /** The connection ended (process exit, stream closed). */
  onClose?: () => void;
  /**
   * A connection of one person to a source whose credential is `oauthPerson`: that person's current access token,
   * read on every HTTP request (so a refreshed token is sent from then on). Without it, such a source is reached
   * with its `listingCredentials` (or none): the gateway's own, for listing tools only.
   */
  personToken?: () => string;
}

export interface McpUpstreamConnection {
  readonly client: Client;
  readonly transport: McpTransportKind;
  /** The stdio server's process id (null over HTTP). */
  readonly pid: number | null;
  /**
   * Every vault value this connection hands the upstream (a stdio server's `env` secrets; an HTTP server's
   * credential, and the token obtained with it), in the forms an upstream may echo them: what is redacted from
   * its results, errors and stderr before they go any further.
   */
  readonly secrets: SecretForms;
  /** Every tool, following `nextCursor` until the server stops giving one; the source's secrets redacted. */
  listAllTools(options?: { timeoutMs?: number }): Promise<ListedMcpTool[]>;
  close(): Promise<void>;
}

async function requireSecret(vault: Vault, name: string, sourceName: string): Promise<string> {
  const value = await vault.get(name);
  if (value === undefined) {
    throw new GatewayError(
      'MCP_SECRET_MISSING',
      `source '${sourceName}' needs the vault secret '${name}', which is not set; add it with \`gateway secrets set ${name}\``,
      { details: { source: sourceName, secret: name } },
    );
  }
  return value;
}

/**
 * The headers the gateway sends to an HTTP upstream (only its own credential, never a client's) and the values to
 * redact. A source whose credential is per person is reached with its `listingCredentials` here; a person's
 * connection sets that person's token itself (`personToken`).
 */
async function credentialHeaders(
  options: McpUpstreamOptions,
  agent: Dispatcher,
): Promise<{ headers: Record<string, string>; secrets: SecretForms }> {
  const configured = options.source.credentials;
  const credentials = configured?.type === 'oauthPerson' ? options.source.listingCredentials : configured;
  if (!credentials || credentials.type === 'none') return { headers: {}, secrets: NO_SECRETS };
  const secret = await requireSecret(options.vault, credentials.secret, options.sourceName);
  const headers = await headersFor(credentials, secret, options.sourceName, agent);
  return { headers, secrets: secretForms([secret, ...Object.values(headers)]) };
}

async function headersFor(
  credentials: Exclude<McpCredentialConfig, { type: 'none' }>,
  secret: string,
  sourceName: string,
  agent: Dispatcher,
): Promise<Record<string, string>> {
  switch (credentials.type) {
    case 'bearer':
      return { authorization: `Bearer ${secret}` };
    case 'apiKey':
      return { [credentials.header.toLowerCase()]: secret };
    case 'oauthClientCredentials': {
      // The gateway's one client credentials grant, through the same guarded agent as the MCP requests.
      const token = await requestClientCredentialsToken({
        requester: `source '${sourceName}'`,
        tokenUrl: credentials.tokenUrl,
        clientId: credentials.clientId,
        clientSecret: () => Promise.resolve(secret),
        scopes: credentials.scopes ?? [],
        dispatcher: agent,
      });
      return { authorization: `Bearer ${token.accessToken}` };
    }
  }
}

function guardedFetch(agent: Dispatcher, headers: () => Record<string, string>): FetchLike {
  return (async (url: string | URL, init?: RequestInit) => {
    const merged = new Headers(init?.headers as HeadersInit | undefined);
    // Whatever the SDK put there, authorization is the gateway's own credential or nothing.
    merged.delete('authorization');
    for (const [name, value] of Object.entries(headers())) merged.set(name, value);
    return (await undiciFetch(url, { ...(init as object), headers: merged, dispatcher: agent } as never)) as unknown as Response;
  }) as FetchLike;
}

type ClientModule = typeof import('@modelcontextprotocol/client');

function newClient(sdk: ClientModule, onToolListChanged?: () => void): Client {
  return new sdk.Client(
    { name: 'governed-tool-gateway', version: '0.1.0' },
    {
      capabilities: {},
      versionNegotiation: { mode: 'auto' },
      // `listChanged` works in both eras: a 2026-07-28 connection opens its subscription stream for it, a
      // 2025-11-25 one takes the notification. No auto-refresh: the gateway re-lists and re-normalises itself.
      ...(onToolListChanged ? { listChanged: { tools: { autoRefresh: false, debounceMs: 0, onChanged: () => onToolListChanged() } } } : {}),
    },
  );
}

/**
 * The error of a failed connection. The SDK's message may quote what the upstream answered (an HTTP error
 * body, a line of a stdio server's output), so the source's secrets are redacted from it, and an error whose
 * message held one is not kept as the cause.
 */
function connectError(sourceName: string, target: string, error: unknown, secrets: SecretForms = NO_SECRETS): GatewayError {
  const refusal = findSsrfRefusal(error);
  if (refusal) return refusal;
  if (error instanceof GatewayError) return error;
  const reason = (error as Error)?.message ?? String(error);
  const redacted = redactText(reason, secrets);
  return new GatewayError(
    'MCP_UPSTREAM_UNAVAILABLE',
    `cannot connect to the MCP server of source '${sourceName}' (${target}): ${redacted}`,
    {
      details: { source: sourceName },
      ...(redacted === reason ? { cause: error } : {}),
    },
  );
}

/** The PEM text of each `caCertificates` file (relative to gateway.yaml's directory). */
async function readCaCertificates(source: McpSourceConfig, sourceName: string, baseDirectory: string): Promise<string[]> {
  const certificates: string[] = [];
  for (const file of source.caCertificates ?? []) {
    const path = resolvePath(baseDirectory, file);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      throw new GatewayError(
        'MCP_CA_CERTIFICATE_UNREADABLE',
        `source '${sourceName}': cannot read caCertificates file ${path}: ${(error as Error).message}`,
        {
          details: { source: sourceName, file },
        },
      );
    }
    if (!text.includes('-----BEGIN CERTIFICATE-----')) {
      throw new GatewayError(
        'MCP_CA_CERTIFICATE_UNREADABLE',
        `source '${sourceName}': caCertificates file ${path} holds no PEM certificate`,
        {
          details: { source: sourceName, file },
        },
      );
    }
    certificates.push(text);
  }
  return certificates;
}

function withAgentClosed(connection: McpUpstreamConnection, closeAgent: () => Promise<unknown>): McpUpstreamConnection {
  const close = connection.close;
  return Object.assign(connection, {
    close: async () => {
      try {
        await close();
      } finally {
        await closeAgent();
      }
    },
  });
}

/** Connects to the source's MCP server (spawning it for stdio). */
export async function connectMcpUpstream(options: McpUpstreamOptions): Promise<McpUpstreamConnection> {
  const { source, sourceName } = options;
  const sdk = await import('@modelcontextprotocol/client');
  const connectMs = source.timeouts?.connectMs ?? DEFAULT_MCP_CONNECT_TIMEOUT_MS;
  const totalMs = source.timeouts?.totalMs ?? DEFAULT_MCP_TOTAL_TIMEOUT_MS;

  const wire = (
    client: Client,
    transport: Transport,
    kind: McpTransportKind,
    pid: () => number | null,
    secrets: SecretForms,
  ): McpUpstreamConnection => {
    client.onclose = () => options.onClose?.();
    void transport;
    return {
      client,
      transport: kind,
      secrets,
      get pid() {
        return pid();
      },
      listAllTools: (listOptions) => listAllTools(client, sourceName, listOptions?.timeoutMs ?? totalMs, secrets),
      close: () => client.close(),
    };
  };

  if (source.command) {
    const { StdioClientTransport, getDefaultEnvironment } = await import('@modelcontextprotocol/client/stdio');
    const values: string[] = [];
    const env: Record<string, string> = { ...getDefaultEnvironment() };
    for (const [name, reference] of Object.entries(source.env ?? {})) {
      const value = await requireSecret(options.vault, reference.secret, sourceName);
      env[name] = value;
      values.push(value);
    }
    const secrets = secretForms(values);
    const [command, ...args] = source.command;
    const transport = new StdioClientTransport({ command: command!, args, env, cwd: options.baseDirectory, stderr: 'pipe' });
    transport.stderr?.on('data', (chunk: Buffer) => options.onStderr?.(redactText(chunk.toString('utf8'), secrets)));
    const client = newClient(sdk, options.onToolListChanged);
    try {
      await client.connect(transport, { timeout: connectMs });
    } catch (error) {
      await client.close().catch(() => undefined);
      throw connectError(sourceName, `stdio ${JSON.stringify(source.command)}`, error, secrets);
    }
    return wire(client, transport, 'stdio', () => transport.pid, secrets);
  }

  const url = new URL(source.url!);
  // A source that trusts its own CA gets an agent of its own (still the one SSRF guard): the extra trust
  // never applies to any other upstream. It is closed with the connection.
  const ca = await readCaCertificates(source, sourceName, options.baseDirectory);
  const ownAgent =
    ca.length > 0 || !options.agent
      ? createGuardedAgent({ allowPrivateNetworks: options.allowPrivateNetworks ?? [], connectTimeoutMs: connectMs, ca })
      : undefined;
  const agent = ownAgent ?? options.agent!;
  const closeAgent = () => (ownAgent ? ownAgent.close().catch(() => undefined) : Promise.resolve());
  let headers: Record<string, string> = {};
  let secrets = NO_SECRETS;
  const personToken = options.personToken;
  if (!personToken) {
    try {
      ({ headers, secrets } = await credentialHeaders(options, agent));
    } catch (error) {
      await closeAgent();
      throw error;
    }
  }
  // A person's connection: that person's token, as it is now, on every request (the pool redacts it per call).
  const fetch = guardedFetch(agent, personToken ? () => ({ authorization: `Bearer ${personToken()}` }) : () => headers);

  const streamable = new sdk.StreamableHTTPClientTransport(url, { fetch });
  const client = newClient(sdk, options.onToolListChanged);
  try {
    await client.connect(streamable, { timeout: connectMs });
    return withAgentClosed(
      wire(client, streamable, 'streamable-http', () => null, secrets),
      closeAgent,
    );
  } catch (firstError) {
    await client.close().catch(() => undefined);
    if (findSsrfRefusal(firstError)) {
      await closeAgent();
      throw findSsrfRefusal(firstError)!;
    }
    // A server that predates Streamable HTTP answers its POST with 4xx; the older HTTP+SSE transport may work.
    const sse = new sdk.SSEClientTransport(url, { fetch });
    const legacy = newClient(sdk, options.onToolListChanged);
    try {
      await legacy.connect(sse, { timeout: connectMs });
      return withAgentClosed(
        wire(legacy, sse, 'sse', () => null, secrets),
        closeAgent,
      );
    } catch {
      await legacy.close().catch(() => undefined);
      await closeAgent();
      throw connectError(sourceName, url.href, firstError, secrets);
    }
  }
}

/**
 * Every tool of the server. A server that echoes its credentials in a tool's description would put them in
 * tools.lock, the drift store and every client's tools/list: the listing (and the message of a failed one)
 * is redacted like a call's result.
 */
async function listAllTools(client: Client, sourceName: string, timeoutMs: number, secrets: SecretForms): Promise<ListedMcpTool[]> {
  const tools: ListedMcpTool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_MCP_LIST_PAGES; page += 1) {
    let result: Awaited<ReturnType<Client['listTools']>>;
    try {
      result = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: timeoutMs });
    } catch (error) {
      const reason = (error as Error)?.message ?? String(error);
      const redacted = redactText(reason, secrets);
      if (redacted === reason) throw error;
      throw new GatewayError('MCP_UPSTREAM_FAILED', `the MCP server of source '${sourceName}' failed tools/list: ${redacted}`, {
        details: { source: sourceName },
      });
    }
    tools.push(...(result.tools as ListedMcpTool[]));
    cursor = result.nextCursor;
    if (!cursor)
      return jsonTextContainsSecret(JSON.stringify(tools), secrets) ? (redactJsonValue(tools, secrets) as ListedMcpTool[]) : tools;
  }
  throw new GatewayError('MCP_LIST_TOO_LONG', `source '${sourceName}' gave more than ${MAX_MCP_LIST_PAGES} pages of tools/list`, {
    details: { source: sourceName },
  });
}

/** The lister core's import, diff and publish take: connect, list every tool, close. */
export function createMcpToolLister(options: { vault: Vault; agent?: Dispatcher }): McpToolLister {
  return async (source: McpSourceConfig, sourceName: string, loaded: LoadedConfig) => {
    const connection = await connectMcpUpstream({
      sourceName,
      source,
      baseDirectory: loaded.directory,
      vault: options.vault,
      ...(options.agent ? { agent: options.agent } : {}),
      allowPrivateNetworks: loaded.config.network?.allowPrivateNetworks ?? [],
    });
    try {
      return await connection.listAllTools();
    } catch (error) {
      throw connectError(sourceName, source.url ?? 'stdio', error, connection.secrets);
    } finally {
      await connection.close().catch(() => undefined);
    }
  };
}

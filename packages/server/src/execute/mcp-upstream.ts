/**
 * The upstream MCP servers of `kind: mcp` sources, as the server uses them: one supervised connection per
 * source, calls forwarded with the gateway's own credential (set by @gateway/runtime's client), results
 * passed through whole.
 *
 * Supervision (docs/sources-mcp.md): a source's server is started (stdio) or connected (HTTP) on first use,
 * not at start-up, so a broken upstream never keeps the gateway from starting. When the connection ends
 * (the process exits, the stream drops) every call in flight fails at once with MCP_UPSTREAM_CRASHED and the
 * connection is re-established with exponential backoff (250 ms doubling to 30 s, back to 250 ms after a
 * minute of good health); a call arriving meanwhile waits for it within its own timeout. `close()` stops
 * everything (the SDK's stdio transport ends the child process).
 */
import { GatewayError, loginIdOf, MCP_LOGIN_SCHEME, type LoadedConfig, type McpSourceConfig } from '@gateway/core';
import {
  connectMcpUpstream,
  NO_SECRETS,
  redactText,
  secretForms,
  type McpUpstreamConnection,
  type SecretForms,
  type Vault,
} from '@gateway/runtime';
import type { Dispatcher } from 'undici';
import { PersonConnections, type PersonConnection } from './mcp-person-connections.js';
import { redactMcpResult, redactProgress } from './mcp-redaction.js';

export const DEFAULT_MCP_CALL_TIMEOUT_MS = 30_000;
export const DEFAULT_MCP_MAX_RESPONSE_BYTES = 5 * 1024 * 1024;
const BACKOFF_INITIAL_MS = 250;
const BACKOFF_MAX_MS = 30_000;
const HEALTHY_AFTER_MS = 60_000;

export interface McpUpstreamLogger {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
}

export interface McpUpstreamPoolOptions {
  loaded: LoadedConfig;
  vault: Vault;
  /** The SSRF-guarded agent for HTTP upstreams. */
  agent?: Dispatcher;
  logger: McpUpstreamLogger;
  /** The upstream said its tool list changed (the rug-pull defence re-lists). */
  onToolListChanged?(sourceName: string): void;
  /** Overrides for tests; production uses the constants above. */
  backoff?: { initialMs: number; maxMs: number };
  /**
   * A person's access token for a per-person login (credentials/person/), refreshed when about to expire; absent
   * when no source's credential is `oauthPerson`. Throws PERSON_LOGIN_NOT_LINKED or PERSON_LOGIN_FAILED.
   */
  personTokens?: (person: string, login: string) => Promise<{ token: string; subject: string | null }>;
  /** Bounds of the per-person connections (mcp-person-connections.ts): how many are kept, when an idle one closes. */
  personConnections?: { max?: number; idleMs?: number };
}

/** A `tools/call` result exactly as the upstream sent it: content blocks of every type, structuredContent, isError. */
export interface UpstreamCallResult {
  content: unknown[];
  structuredContent?: unknown;
  isError?: boolean;
  [key: string]: unknown;
}

export interface UpstreamCallOptions {
  signal?: AbortSignal;
  /** Progress notifications of the upstream, forwarded to the caller's client. */
  onProgress?: (progress: { progress: number; total?: number; message?: string }) => void;
  /** W3C trace context for the request's `_meta` (SEP-414: `traceparent`, `tracestate`), when traces are on. */
  meta?: { traceparent: string; tracestate?: string };
  /** The session's person: a source whose credential is per person is called with this person's own token only. */
  person?: string;
  /** Told the login a receipt records when the call carries a person's token: `<source>/mcp sub=<sub>`. */
  onLogin?: (login: string) => void;
}

interface SourceState {
  name: string;
  config: McpSourceConfig;
  /** `<source>/mcp` when the source's credential is per person: calls then go over that person's own connection. */
  personLogin: string | undefined;
  connection: McpUpstreamConnection | undefined;
  connecting: Promise<McpUpstreamConnection> | undefined;
  /** Rejecters of the calls in flight, so a crash fails them at once instead of at their timeout. */
  inFlight: Set<(error: GatewayError) => void>;
  failures: number;
  connectedAt: number;
  restartTimer: NodeJS.Timeout | undefined;
}

export class McpUpstreamPool {
  private readonly sources = new Map<string, SourceState>();
  private readonly persons: PersonConnections;
  private closed = false;

  constructor(private readonly options: McpUpstreamPoolOptions) {
    this.persons = new PersonConnections({
      ...options.personConnections,
      connect: (entry, token, onClose) => this.connectPerson(entry, token, onClose),
    });
    for (const [name, config] of Object.entries(options.loaded.config.sources)) {
      if (config.kind !== 'mcp') continue;
      this.sources.set(name, {
        name,
        config,
        personLogin: config.credentials?.type === 'oauthPerson' ? loginIdOf(name, MCP_LOGIN_SCHEME) : undefined,
        connection: undefined,
        connecting: undefined,
        inFlight: new Set(),
        failures: 0,
        connectedAt: 0,
        restartTimer: undefined,
      });
    }
  }

  private state(sourceName: string): SourceState {
    const state = this.sources.get(sourceName);
    if (!state) {
      throw new GatewayError('MCP_SOURCE_UNKNOWN', `'${sourceName}' is not an MCP source of this gateway`);
    }
    return state;
  }

  private backoffMs(failures: number): number {
    const initial = this.options.backoff?.initialMs ?? BACKOFF_INITIAL_MS;
    const max = this.options.backoff?.maxMs ?? BACKOFF_MAX_MS;
    return Math.min(max, initial * 2 ** Math.max(0, failures - 1));
  }

  /** The live connection, connecting (or waiting for a restart in progress) when there is none. */
  connection(sourceName: string): Promise<McpUpstreamConnection> {
    if (this.closed) {
      return Promise.reject(new GatewayError('MCP_UPSTREAM_CLOSED', 'the gateway is shutting down'));
    }
    const state = this.state(sourceName);
    if (state.connection) return Promise.resolve(state.connection);
    state.connecting ??= this.connect(state).finally(() => {
      state.connecting = undefined;
    });
    return state.connecting;
  }

  private async connect(state: SourceState): Promise<McpUpstreamConnection> {
    const { loaded, vault, agent, logger } = this.options;
    let connection: McpUpstreamConnection;
    try {
      connection = await connectMcpUpstream({
        sourceName: state.name,
        source: state.config,
        baseDirectory: loaded.directory,
        vault,
        ...(agent ? { agent } : {}),
        allowPrivateNetworks: loaded.config.network?.allowPrivateNetworks ?? [],
        onStderr: (text) => logger.info({ source: state.name, stderr: text.trimEnd() }, 'mcp upstream stderr'),
        onToolListChanged: () => this.options.onToolListChanged?.(state.name),
        onClose: () => this.lost(state, connection),
      });
    } catch (error) {
      state.failures += 1;
      throw error;
    }
    if (this.closed) {
      await connection.close().catch(() => undefined);
      throw new GatewayError('MCP_UPSTREAM_CLOSED', 'the gateway is shutting down');
    }
    state.connection = connection;
    state.connectedAt = Date.now();
    logger.info({ source: state.name, transport: connection.transport, pid: connection.pid }, 'mcp upstream connected');
    return connection;
  }

  /** The connection ended: fail what is in flight now, and reconnect after a backoff. */
  private lost(state: SourceState, connection: McpUpstreamConnection): void {
    if (state.connection !== connection) return;
    state.connection = undefined;
    const crash = new GatewayError(
      'MCP_UPSTREAM_CRASHED',
      `the MCP server of source '${state.name}' stopped during the call (${connection.transport}); it is being restarted, try again`,
      { details: { source: state.name } },
    );
    for (const reject of state.inFlight) reject(crash);
    state.inFlight.clear();
    if (this.closed) return;
    if (Date.now() - state.connectedAt > HEALTHY_AFTER_MS) state.failures = 0;
    state.failures += 1;
    const delay = this.backoffMs(state.failures);
    this.options.logger.warn({ source: state.name, restartInMs: delay, failures: state.failures }, 'mcp upstream lost; restarting');
    // The restart runs through `connection()`, so a call arriving during the backoff waits for the same attempt.
    let resolveRestart!: (connection: McpUpstreamConnection) => void;
    let rejectRestart!: (error: unknown) => void;
    state.connecting = new Promise<McpUpstreamConnection>((resolve, reject) => {
      resolveRestart = resolve;
      rejectRestart = reject;
    });
    state.connecting.catch(() => undefined);
    state.restartTimer = setTimeout(() => {
      state.restartTimer = undefined;
      this.connect(state)
        .then(resolveRestart, rejectRestart)
        .finally(() => {
          state.connecting = undefined;
        });
    }, delay);
    state.restartTimer.unref();
  }

  /** A person's own connection: it sends that person's current token on every request, and nothing else. */
  private async connectPerson(entry: PersonConnection, token: () => string, onClose: () => void): Promise<McpUpstreamConnection> {
    const { loaded, vault, agent } = this.options;
    const state = this.state(entry.sourceName);
    try {
      return await connectMcpUpstream({
        sourceName: state.name,
        source: state.config,
        baseDirectory: loaded.directory,
        vault,
        ...(agent ? { agent } : {}),
        allowPrivateNetworks: loaded.config.network?.allowPrivateNetworks ?? [],
        personToken: token,
        onClose,
      });
    } catch (error) {
      // What the upstream answered may quote the token it refused.
      const reason = (error as Error)?.message ?? String(error);
      const redacted = redactText(reason, entry.secrets);
      if (redacted === reason) throw error;
      throw new GatewayError(error instanceof GatewayError ? error.code : 'MCP_UPSTREAM_UNAVAILABLE', redacted, {
        details: { source: state.name },
      });
    }
  }

  /** The session's person's token for a per-person source: never another person's, never the gateway's. */
  private personToken(login: string, person: string | undefined) {
    if (person === undefined || !this.options.personTokens) {
      return Promise.reject(
        new GatewayError('PERSON_LOGIN_NOT_LINKED', `the login ${login} is per person, and this call has no person`, {
          details: { login },
        }),
      );
    }
    return this.options.personTokens(person, login);
  }

  /** Forwards one `tools/call`; the per-source timeout and response-size limit apply. */
  async callTool(
    sourceName: string,
    upstreamName: string,
    argumentsValue: unknown,
    options: UpstreamCallOptions = {},
  ): Promise<UpstreamCallResult> {
    const state = this.state(sourceName);
    const timeoutMs = state.config.timeouts?.totalMs ?? DEFAULT_MCP_CALL_TIMEOUT_MS;
    const maxBytes = state.config.maxResponseBytes ?? DEFAULT_MCP_MAX_RESPONSE_BYTES;
    const deadline = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
    const timedOut = (): GatewayError =>
      new GatewayError('MCP_UPSTREAM_TIMEOUT', `the MCP server of source '${sourceName}' did not answer within ${timeoutMs} ms`, {
        details: { source: sourceName, timeoutMs },
      });

    let rejectCrash!: (error: GatewayError) => void;
    const crashed = new Promise<never>((_resolve, reject) => {
      rejectCrash = reject;
    });
    crashed.catch(() => undefined);
    const aborted = new Promise<never>((_resolve, reject) => {
      const onAbort = () => reject(deadline.aborted ? timedOut() : new GatewayError('MCP_CALL_CANCELLED', 'the call was cancelled'));
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
    aborted.catch(() => undefined);

    let connection: McpUpstreamConnection | undefined;
    let secrets = NO_SECRETS;
    let personEntry: PersonConnection | undefined;
    let personToken = '';
    try {
      if (state.personLogin === undefined) {
        state.inFlight.add(rejectCrash);
        connection = await Promise.race([this.connection(sourceName), aborted]);
        secrets = connection.secrets;
      } else {
        const { token, subject } = await Promise.race([this.personToken(state.personLogin, options.person), aborted]);
        personToken = token;
        const acquired = this.persons.acquire(sourceName, options.person!, token, rejectCrash);
        personEntry = acquired.entry;
        secrets = acquired.entry.secrets;
        options.onLogin?.(`${state.personLogin} sub=${subject ?? '?'}`);
        connection = await Promise.race([acquired.connection, aborted]);
      }
      const onProgress = options.onProgress;
      // The SDK sends notifications/cancelled upstream when `signal` aborts (cancellation is forwarded).
      const call = connection.client.callTool(
        {
          name: upstreamName,
          arguments: (argumentsValue ?? {}) as Record<string, unknown>,
          ...(options.meta ? { _meta: { ...options.meta } } : {}),
        },
        {
          signal,
          timeout: timeoutMs,
          ...(onProgress ? { onprogress: (progress) => onProgress(redactProgress(progress, secrets)), resetTimeoutOnProgress: false } : {}),
        },
      );
      const result = (await Promise.race([call, crashed, aborted])) as UpstreamCallResult;
      const serialised = JSON.stringify(result);
      const size = Buffer.byteLength(serialised);
      if (size > maxBytes) {
        throw new GatewayError(
          'MCP_RESPONSE_TOO_LARGE',
          `the result of ${upstreamName} (${size} bytes) is larger than maxResponseBytes (${maxBytes})`,
          {
            details: { source: sourceName, bytes: size, maxBytes },
          },
        );
      }
      // A concurrent call of the same person may have refreshed the token this connection now sends.
      if (personEntry && personEntry.token !== personToken) secrets = mergedSecrets(personToken, personEntry);
      // Whatever the upstream echoed of the source's credentials stops here (docs/security.md).
      return redactMcpResult(result, serialised, secrets, { sourceName, toolName: upstreamName });
    } catch (error) {
      if (error instanceof GatewayError) throw error;
      if (deadline.aborted) throw timedOut();
      // The upstream's error message (a JSON-RPC error's words) goes to the client: redacted like a result.
      const reason = (error as Error)?.message ?? String(error);
      if (personEntry && personEntry.token !== personToken) secrets = mergedSecrets(personToken, personEntry);
      const redacted = redactText(reason, secrets);
      throw new GatewayError('MCP_UPSTREAM_FAILED', `the MCP server of source '${sourceName}' failed the call: ${redacted}`, {
        details: { source: sourceName },
        ...(redacted === reason ? { cause: error } : {}),
      });
    } finally {
      if (personEntry) this.persons.release(personEntry, rejectCrash);
      else state.inFlight.delete(rejectCrash);
    }
  }

  /** Every tool of the source's server (the rug-pull defence re-lists with this). */
  async listTools(sourceName: string) {
    return (await this.connection(sourceName)).listAllTools();
  }

  /** True while the source's upstream is connected (the periodic re-list only runs then). */
  isConnected(sourceName: string): boolean {
    return this.sources.get(sourceName)?.connection !== undefined;
  }

  /** The stdio server's process id, when running (for supervision tests and status). */
  pid(sourceName: string): number | null {
    return this.state(sourceName).connection?.pid ?? null;
  }

  /** How many per-person connections are kept (for tests and status). */
  get personConnectionCount(): number {
    return this.persons.size;
  }

  /** Stops every upstream: stdio processes end, HTTP sessions close. */
  async close(): Promise<void> {
    this.closed = true;
    const closing: Promise<void>[] = [this.persons.closeAll()];
    for (const state of this.sources.values()) {
      if (state.restartTimer) clearTimeout(state.restartTimer);
      const connection = state.connection;
      state.connection = undefined;
      if (connection) closing.push(connection.close().catch(() => undefined));
    }
    await Promise.all(closing);
  }
}

/** The forms of the token a call started with and of the one its connection sends now (a refresh in between). */
function mergedSecrets(startedWith: string, entry: PersonConnection): SecretForms {
  return secretForms([startedWith, entry.token]);
}

/**
 * The connections of an MCP source whose credential is per person (`oauthPerson`, docs/credentials.md): one per
 * person and source, each sending only that person's access token. A connection made for one person is never used
 * for another person's call (an upstream session, and whatever the server keeps for it, belongs to the account
 * that opened it).
 *
 * Bounded: at most `max` connections are kept (all sources together); past it the least recently used idle one is
 * closed, and one idle for `idleMs` is closed by a sweep. A connection with calls in flight is never closed for
 * room, so the bound is exceeded only while more people than `max` have calls in flight at once.
 */
import { GatewayError } from '@gateway/core';
import { secretForms, type McpUpstreamConnection, type SecretForms } from '@gateway/runtime';

export const DEFAULT_MAX_PERSON_CONNECTIONS = 100;
export const DEFAULT_PERSON_CONNECTION_IDLE_MS = 5 * 60_000;

/** One person's connection to one source. */
export interface PersonConnection {
  readonly sourceName: string;
  readonly person: string;
  /** The person's token as last obtained: what the connection sends from now on (read on every request). */
  token: string;
  /** The token's forms, redacted from what the upstream answers. */
  secrets: SecretForms;
  connection: McpUpstreamConnection | undefined;
  connecting: Promise<McpUpstreamConnection> | undefined;
  /** Rejecters of the calls in flight, so a dropped connection fails them at once. */
  inFlight: Set<(error: GatewayError) => void>;
  lastUsedAt: number;
}

export interface PersonConnectionsOptions {
  max?: number;
  idleMs?: number;
  /** Opens the person's connection; `token()` is read on every request it sends, `onClose` when it ends. */
  connect(entry: PersonConnection, token: () => string, onClose: () => void): Promise<McpUpstreamConnection>;
  now?: () => number;
}

const keyOf = (sourceName: string, person: string): string => `${sourceName}\u0000${person}`;

export class PersonConnections {
  private readonly entries = new Map<string, PersonConnection>();
  private readonly max: number;
  private readonly idleMs: number;
  private readonly now: () => number;
  private sweep: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly options: PersonConnectionsOptions) {
    this.max = options.max ?? DEFAULT_MAX_PERSON_CONNECTIONS;
    this.idleMs = options.idleMs ?? DEFAULT_PERSON_CONNECTION_IDLE_MS;
    this.now = options.now ?? Date.now;
  }

  /** How many connections are kept now (for tests and status). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * The person's connection to the source, carrying `token` from now on, opened when there is none. The entry
   * counts as busy until `release(entry, rejectOnLoss)` (it is not closed for room or idleness meanwhile).
   */
  acquire(
    sourceName: string,
    person: string,
    token: string,
    rejectOnLoss: (error: GatewayError) => void,
  ): { entry: PersonConnection; connection: Promise<McpUpstreamConnection> } {
    if (this.closed) throw new GatewayError('MCP_UPSTREAM_CLOSED', 'the gateway is shutting down');
    const key = keyOf(sourceName, person);
    let entry = this.entries.get(key);
    if (!entry) {
      entry = {
        sourceName,
        person,
        token,
        secrets: secretForms([token]),
        connection: undefined,
        connecting: undefined,
        inFlight: new Set(),
        lastUsedAt: this.now(),
      };
      this.sweep ??= setInterval(() => this.closeIdle(), Math.max(1_000, Math.floor(this.idleMs / 2))).unref();
    } else if (entry.token !== token) {
      entry.token = token;
      entry.secrets = secretForms([token]);
    }
    // Most recently used last: the map's order is the eviction order.
    this.entries.delete(key);
    this.entries.set(key, entry);
    entry.lastUsedAt = this.now();
    entry.inFlight.add(rejectOnLoss);
    if (this.entries.size > this.max) this.trim();
    const current = entry;
    if (current.connection) return { entry: current, connection: Promise.resolve(current.connection) };
    current.connecting ??= this.open(current).finally(() => {
      current.connecting = undefined;
    });
    return { entry: current, connection: current.connecting };
  }

  release(entry: PersonConnection, rejectOnLoss: (error: GatewayError) => void): void {
    entry.inFlight.delete(rejectOnLoss);
    entry.lastUsedAt = this.now();
    if (this.entries.size > this.max) this.trim();
  }

  private async open(entry: PersonConnection): Promise<McpUpstreamConnection> {
    let opened: McpUpstreamConnection | undefined;
    try {
      opened = await this.options.connect(
        entry,
        () => entry.token,
        () => this.lost(entry, opened),
      );
    } catch (error) {
      // Every call waiting for it gets this error; the person's next call tries a new connection.
      this.forget(entry);
      throw error;
    }
    if (this.closed || this.entries.get(keyOf(entry.sourceName, entry.person)) !== entry) {
      await opened.close().catch(() => undefined);
      throw new GatewayError('MCP_UPSTREAM_CLOSED', 'the connection was closed while it opened');
    }
    entry.connection = opened;
    return opened;
  }

  /** The connection ended: fail its calls in flight now; the person's next call opens a new one. */
  private lost(entry: PersonConnection, connection: McpUpstreamConnection | undefined): void {
    if (connection === undefined || entry.connection !== connection) return;
    entry.connection = undefined;
    this.forget(entry);
    const crash = new GatewayError(
      'MCP_UPSTREAM_CRASHED',
      `the MCP server of source '${entry.sourceName}' closed the connection during the call; try again`,
      { details: { source: entry.sourceName } },
    );
    for (const reject of entry.inFlight) reject(crash);
    entry.inFlight.clear();
  }

  private forget(entry: PersonConnection): void {
    const key = keyOf(entry.sourceName, entry.person);
    if (this.entries.get(key) === entry) this.entries.delete(key);
  }

  private close(entry: PersonConnection): void {
    this.forget(entry);
    const connection = entry.connection;
    entry.connection = undefined;
    if (connection) void connection.close().catch(() => undefined);
  }

  /** Closes the least recently used idle connections until at most `max` are kept. */
  private trim(): void {
    for (const entry of this.entries.values()) {
      if (this.entries.size <= this.max) return;
      if (entry.inFlight.size === 0 && !entry.connecting) this.close(entry);
    }
  }

  private closeIdle(): void {
    const before = this.now() - this.idleMs;
    for (const entry of [...this.entries.values()]) {
      if (entry.inFlight.size === 0 && !entry.connecting && entry.lastUsedAt <= before) this.close(entry);
    }
  }

  async closeAll(): Promise<void> {
    this.closed = true;
    if (this.sweep) clearInterval(this.sweep);
    const closing: Promise<void>[] = [];
    for (const entry of this.entries.values()) {
      const connection = entry.connection;
      entry.connection = undefined;
      if (connection) closing.push(connection.close().catch(() => undefined));
    }
    this.entries.clear();
    await Promise.all(closing);
  }
}

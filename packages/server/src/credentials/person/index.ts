/**
 * OAuth per person (`type: oauthPerson`, docs/config.md › Credentials): each person links their own account at
 * the customer's provider, and a call carries that person's access token, never another person's and never one
 * of the gateway's own. What this area holds:
 *
 * - the links (ports.ts, metadata only) and each person's tokens in the vault (token-vault.ts);
 * - the gate the call decision asks (gate.ts): a call whose login is not linked for the session's person answers
 *   "a person must act first" with the URL of the connect page; so does a call whose token's refresh found the
 *   grant revoked, as the gate refreshes a token about to expire before the call goes on;
 * - linking (linking.ts) behind that page, and the access token for a call, refreshed shortly before it
 *   expires, one refresh at a time per person and login; `invalid_grant` removes the link.
 *
 * The decision is synchronous, so the links are also held in this process's memory (read at start, written
 * through on every change here). With several worker processes a link made in another one is read from the store
 * when a call misses it, so the person's retry finds it. Spent connect tickets and linking attempts in flight are
 * in the ephemeral state the processes share, so a flow started in one may finish in another.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Dispatcher } from 'undici';
import { GatewayError, personCredentialsOf, type LoadedConfig } from '@gateway/core';
import type { PersonTokenSet, Vault } from '@gateway/runtime';
import type { PersonActionGate } from '../../calls/pipeline.js';
import type { EphemeralState } from '../../store/ephemeral-state.js';
import type { Leases } from '../../store/leases.js';
import { CONNECT_TICKET_KEY_SECRET, createConnectTickets, type ConnectTicketClaims } from './connect-tickets.js';
import { createPersonLoginGate } from './gate.js';
import { createLinking, type Linking } from './linking.js';
import { refreshAcrossProcesses } from './refresh-lease.js';
import type { LinkedAccount, LinkedAccounts } from './ports.js';
import { personLoginSettings, type PersonLoginSettings } from './settings.js';
import { deleteTokens, readTokens, writeTokens, type StoredTokens } from './token-vault.js';

export type { LinkedAccount, LinkedAccounts } from './ports.js';
export type { BrowserIdentity, LinkOutcome } from './linking.js';
export { CONNECT_TICKET_KEY_SECRET } from './connect-tickets.js';

export interface PersonLoginsOptions {
  loaded: LoadedConfig;
  vault: Vault;
  accounts: LinkedAccounts;
  /** The key of connect tickets (from the vault). */
  ticketKey: Uint8Array;
  /** The SSRF-guarded agent requests to providers go through. */
  dispatcher?: Dispatcher;
  warn(details: object, message: string): void;
  now?: () => number;
  /**
   * The storage's leases: a refresh takes the lease of its person and login, so processes sharing one storage
   * (`serve --workers`, replicas) refresh a token once, not once each (a provider that rotates refresh tokens
   * would take the second refresh for a stolen token and revoke the grant). Without it, one process collapses its
   * own concurrent refreshes only.
   */
  leases?: Leases;
  /**
   * Where spent connect tickets and linking attempts in flight are kept: the ephemeral state the processes serving
   * together share (with `serve --workers` or replicas, the storage's), so the provider's callback may reach any of
   * them and a ticket is spent once across all; one process's memory otherwise.
   */
  ephemeral: EphemeralState;
}

export interface PersonLogins {
  /** The per-person logins configured, by login id. */
  readonly settings: ReadonlyMap<string, PersonLoginSettings>;
  /** The gate the call decision asks (calls/pipeline.ts). */
  readonly gate: PersonActionGate;
  /** The connect page's flow (authorization/handlers/connect.ts serves it). */
  readonly linking: Linking;
  /** Where the provider sends the person back: `<gateway.url>/connect/callback`. */
  readonly redirectUri: string;
  /** The connect page of a login for a person (a call's session, or null from the consent page). */
  connectUrl(claims: Omit<ConnectTicketClaims, 'expiresAt' | 'nonce'>): string;
  /** Whether the person has linked the login (this process's view; see the module comment). */
  isLinked(person: string, login: string): boolean;
  /**
   * The person's access token for a call, refreshed when it is about to expire. Throws PERSON_LOGIN_NOT_LINKED
   * (no link, or the provider answered `invalid_grant`, which removes the link) or PERSON_LOGIN_FAILED.
   */
  accessToken(person: string, login: string): Promise<{ token: string; subject: string | null }>;
  list(filter?: { person?: string }): Promise<LinkedAccount[]>;
  /** Removes a link and its tokens; false when there was none. */
  unlink(person: string, login: string): Promise<boolean>;
  /** Reads the links into memory (at start). */
  load(): Promise<void>;
}

/** Refresh this long before the access token expires: a tenth of its life, at most 30 s. */
function refreshMargin(tokens: StoredTokens): number {
  return Math.min(30_000, Math.max(0, tokens.expiresAt - tokens.obtainedAt) / 10);
}

const keyOf = (person: string, login: string): string => `${person}\u0000${login}`;

export function createPersonLogins(options: PersonLoginsOptions): PersonLogins {
  const { loaded, vault, accounts } = options;
  const now = options.now ?? Date.now;
  const settings = personLoginSettings(loaded, vault, options.dispatcher);
  const tickets = createConnectTickets(options.ticketKey, options.ephemeral);
  const base = loaded.config.gateway.url.replace(/\/+$/, '');
  const redirectUri = `${base}/connect/callback`;
  const links = new Map<string, LinkedAccount>();
  /** When a missing link was last looked up in the store (several workers: another one may have made it). */
  const lookedUp = new Map<string, number>();
  /** This process as a holder of refresh leases. */
  const refreshHolder = `person-logins-${randomUUID()}`;
  /** One refresh in flight per person and login: concurrent calls share it. */
  const refreshing = new Map<string, Promise<StoredTokens>>();

  function notLinked(person: string, login: string, why: string): GatewayError {
    return new GatewayError('PERSON_LOGIN_NOT_LINKED', `the login ${login} ${why}; call the tool again to be asked to link it`, {
      details: { login, person },
    });
  }

  async function forget(person: string, login: string): Promise<boolean> {
    links.delete(keyOf(person, login));
    const removed = await accounts.unlink(person, login);
    await deleteTokens(vault, person, login);
    return removed;
  }

  function lookUpLater(person: string, login: string): void {
    const key = keyOf(person, login);
    const at = now();
    if (at - (lookedUp.get(key) ?? 0) < 1_000) return;
    lookedUp.set(key, at);
    if (lookedUp.size > 10_000) lookedUp.clear();
    accounts.find(person, login).then(
      (account) => {
        if (account) links.set(key, account);
      },
      (error: unknown) => options.warn({ login, error: (error as Error).message }, 'reading a linked account failed'),
    );
  }

  async function link(account: Omit<LinkedAccount, 'linkedAt'>, tokens: PersonTokenSet): Promise<LinkedAccount> {
    const linked: LinkedAccount = { ...account, scopes: [...account.scopes].sort(), linkedAt: now() };
    // Tokens first: a link the store shows always has its tokens in the vault.
    await writeTokens(vault, account.person, account.login, { ...tokens, obtainedAt: now() });
    await accounts.link(linked);
    links.set(keyOf(account.person, account.login), linked);
    return linked;
  }

  async function refresh(person: string, login: string, stored: StoredTokens): Promise<StoredTokens> {
    const loginSettings = settings.get(login)!;
    if (!stored.refreshToken) {
      await forget(person, login);
      throw notLinked(person, login, 'expired and the provider gave no refresh token');
    }
    let fresh: PersonTokenSet;
    try {
      fresh = await loginSettings.client.refresh(stored.refreshToken, stored.scope);
    } catch (error) {
      // invalid_grant: the grant is gone at the provider (revoked, expired); only the person can give a new one.
      if (error instanceof GatewayError && error.code === 'PERSON_LOGIN_NOT_LINKED') await forget(person, login);
      throw error;
    }
    // A provider that does not rotate refresh tokens keeps the one it gave (RFC 6749 §6).
    const next: StoredTokens = { ...fresh, refreshToken: fresh.refreshToken ?? stored.refreshToken, obtainedAt: now() };
    await writeTokens(vault, person, login, next);
    const scopes = next.scope.split(' ').filter((scope) => scope !== '');
    if (!(await accounts.refreshed(person, login, { expiresAt: next.expiresAt, scopes }))) {
      // Unlinked while the refresh ran: the new tokens go too.
      await deleteTokens(vault, person, login);
      throw notLinked(person, login, 'was unlinked');
    }
    const cached = links.get(keyOf(person, login));
    if (cached) links.set(keyOf(person, login), { ...cached, expiresAt: next.expiresAt, scopes: [...scopes].sort() });
    return next;
  }

  const refreshOnce = refreshAcrossProcesses({
    leases: options.leases,
    holder: refreshHolder,
    now,
    read: (person, login) => readTokens(vault, person, login),
    isFresh: (tokens) => now() < tokens.expiresAt - refreshMargin(tokens),
    refresh,
    unlinked: (person, login, why) => notLinked(person, login, why),
  });

  const service: PersonLogins = {
    settings,
    redirectUri,
    gate: createPersonLoginGate({
      loaded,
      settings,
      isLinked: (person, login) => service.isLinked(person, login),
      findLinked: async (person, login) => {
        const account = await accounts.find(person, login);
        if (account) links.set(keyOf(person, login), account);
        return account !== undefined;
      },
      ensureUsable: (person, login) =>
        service.accessToken(person, login).then(
          () => true,
          (error: unknown) => !(error instanceof GatewayError && error.code === 'PERSON_LOGIN_NOT_LINKED'),
        ),
      connectUrl: (claims) => service.connectUrl(claims),
    }),
    linking: createLinking({ settings, tickets, state: options.ephemeral, redirectUri, link, warn: options.warn, now }),
    connectUrl: (claims) => `${base}/connect?ticket=${encodeURIComponent(tickets.issue(claims, now()))}`,
    isLinked(person, login) {
      if (links.has(keyOf(person, login))) return true;
      lookUpLater(person, login);
      return false;
    },
    async accessToken(person, login) {
      const key = keyOf(person, login);
      const account = links.get(key) ?? (await accounts.find(person, login));
      if (!account) throw notLinked(person, login, 'is not linked for this person');
      const stored = await readTokens(vault, person, login);
      if (!stored) {
        await forget(person, login);
        throw notLinked(person, login, 'has no tokens in the vault');
      }
      if (now() < stored.expiresAt - refreshMargin(stored)) return { token: stored.accessToken, subject: account.subject };
      let pending = refreshing.get(key);
      if (!pending) {
        pending = refreshOnce(person, login, stored).finally(() => refreshing.delete(key));
        refreshing.set(key, pending);
      }
      const fresh = await pending;
      return { token: fresh.accessToken, subject: account.subject };
    },
    list: (filter) => accounts.list(filter),
    unlink: (person, login) => forget(person, login),
    async load() {
      for (const account of await accounts.list()) links.set(keyOf(account.person, account.login), account);
    },
  };
  return service;
}

/**
 * The per-person logins of a gateway, ready to serve: undefined when gateway.yaml configures none. The connect
 * tickets' key comes from the vault, created there on first start (config loading made sure the vault is writable).
 */
export async function startPersonLogins(options: Omit<PersonLoginsOptions, 'ticketKey'>): Promise<PersonLogins | undefined> {
  const hasPersonLogins = Object.values(options.loaded.config.sources).some((source) => personCredentialsOf(source).length > 0);
  if (!hasPersonLogins) return undefined;
  // Processes starting together on an empty vault each generate a key: the one stored first is everyone's.
  const key =
    (await options.vault.get(CONNECT_TICKET_KEY_SECRET)) ??
    (await options.vault.create(CONNECT_TICKET_KEY_SECRET, randomBytes(32).toString('base64url')));
  const service = createPersonLogins({ ...options, ticketKey: Buffer.from(key, 'base64url') });
  await service.load();
  return service;
}

import { randomBytes } from 'node:crypto';
import { secretsEqual, type PersonRole } from '@gateway/runtime';
import type { EphemeralState } from '../../store/ephemeral-state.js';
import { seal, sealedKey, unseal } from '../../store/sealed.js';

/** The ephemeral state kind of browser sessions. */
const KIND = 'browser-session';

/** Who signed in to the gateway's pages, and how. */
export interface SignedInPerson {
  /** Stable subject: `local:<name>` or `oidc:<issuer>#<sub>` (docs/authorization.md › People). */
  subject: string;
  name: string;
  email?: string;
  via: 'local' | 'oidc';
  /**
   * Roles held at sign-in (`operator` opens the console): a local person's from the people file, an OIDC
   * person's from the `auth.oidc.operators` claim. Absent: none.
   */
  roles?: PersonRole[];
}

export interface BrowserSession {
  id: string;
  /**
   * Names this browser for as long as it keeps the cookie, across the id rotation at sign-in; never sent to
   * it. Pending authorizations are bound to it (consent/pending.ts).
   */
  browserId: string;
  /** True once the browser came back with the cookie: sessions that never did are evicted first. */
  isSeen: boolean;
  /** Every form carries this token; a POST without the same value is refused (synchroniser token pattern). */
  csrfToken: string;
  person?: SignedInPerson;
  /** An OIDC sign-in in progress (state, nonce, PKCE verifier), bound to this browser. */
  oidc?: { state: string; nonce: string; codeVerifier: string; requestId: string; returnTo?: string; startedAt: number };
  expiresAt: number;
}

export interface CookieOptions {
  /** https deployments: `Secure` and the `__Host-` prefix (RFC 6265bis §4.1.3.2: host-only, path /). */
  isHttps: boolean;
  lifetimeSeconds: number;
}

/** Reads one cookie from a Cookie header (RFC 6265 §5.4). */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const separator = part.indexOf('=');
    if (separator < 0) continue;
    if (part.slice(0, separator).trim() === name) return part.slice(separator + 1).trim();
  }
  return undefined;
}

/**
 * Browser sessions of the sign-in and consent pages, kept in the ephemeral state port (store/ephemeral-state.ts):
 * this process's memory, so a gateway restart signs people out, which costs them one sign-in and keeps no
 * long-lived secrets on disk; or, with several worker processes (`gateway serve --workers N`), the database, so
 * any worker can continue them. In a shared store each is sealed with its cookie (store/sealed.ts): the database never
 * holds a session id or CSRF token it could be used with. Bounded in size (per process) and time.
 */
export class BrowserSessions {
  readonly cookieName: string;
  /** The sessions this process created or read, oldest first: what eviction looks at. */
  private readonly sessions = new Map<string, BrowserSession>();

  constructor(
    private readonly options: CookieOptions,
    private readonly state: EphemeralState,
    private readonly maxSessions = 10_000,
  ) {
    this.cookieName = options.isHttps ? '__Host-gateway-session' : 'gateway-session';
  }

  /**
   * Where a session is kept: in a shared store, under the hash of its id and sealed with it; in this process's
   * memory, as it is (nothing to protect there, and the sign-in pages do not pay for the hashing).
   */
  private keyOf(id: string): string {
    return this.state.isShared ? sealedKey(id) : id;
  }

  /** Writes a changed session to the store. */
  async save(session: BrowserSession): Promise<void> {
    const { id, ...rest } = session;
    const text = JSON.stringify(rest);
    await this.state.put(KIND, this.keyOf(id), this.state.isShared ? seal('browser-session', id, text) : text, session.expiresAt);
  }

  private async load(id: string, now: number): Promise<BrowserSession | undefined> {
    const stored = await this.state.get(KIND, this.keyOf(id), now);
    const text = stored === undefined || !this.state.isShared ? stored : unseal('browser-session', id, stored);
    if (text === undefined) {
      this.sessions.delete(id);
      return undefined;
    }
    const session = { ...(JSON.parse(text) as Omit<BrowserSession, 'id'>), id };
    this.sessions.set(id, session);
    return session;
  }

  async find(cookieHeader: string | undefined, now = Date.now()): Promise<BrowserSession | undefined> {
    const id = readCookie(cookieHeader, this.cookieName);
    if (!id) return undefined;
    const session = await this.load(id, now);
    if (!session) return undefined;
    if (session.expiresAt <= now) {
      this.sessions.delete(id);
      return undefined;
    }
    if (!session.isSeen) {
      session.isSeen = true;
      await this.save(session);
    }
    return session;
  }

  /** A fresh anonymous (or signed-in, after rotation) session; the caller sets its cookie. */
  async create(person?: SignedInPerson, now = Date.now(), browserId = randomBytes(24).toString('base64url')): Promise<BrowserSession> {
    await this.evict(now);
    const session: BrowserSession = {
      id: randomBytes(32).toString('base64url'),
      browserId,
      isSeen: false,
      csrfToken: randomBytes(32).toString('base64url'),
      expiresAt: now + this.options.lifetimeSeconds * 1000,
      ...(person ? { person } : {}),
    };
    this.sessions.set(session.id, session);
    await this.save(session);
    return session;
  }

  /**
   * Signing in replaces the session id and CSRF token (no session fixation, OWASP); only the internal
   * browser id is kept, so the requests this browser started stay its own.
   */
  async signIn(previous: BrowserSession | undefined, person: SignedInPerson): Promise<BrowserSession> {
    if (previous) await this.signOut(previous);
    const session = await this.create(person, Date.now(), previous?.browserId);
    session.isSeen = true;
    await this.save(session);
    return session;
  }

  async signOut(session: BrowserSession): Promise<void> {
    this.sessions.delete(session.id);
    await this.state.delete(KIND, this.keyOf(session.id));
  }

  isCsrfTokenValid(session: BrowserSession | undefined, token: string | undefined): boolean {
    return session !== undefined && typeof token === 'string' && token.length > 0 && secretsEqual(session.csrfToken, token);
  }

  setCookieHeader(session: BrowserSession): string {
    const attributes = [
      `${this.cookieName}=${session.id}`,
      'Path=/',
      'HttpOnly',
      'SameSite=Lax',
      `Max-Age=${this.options.lifetimeSeconds}`,
    ];
    if (this.options.isHttps) attributes.push('Secure');
    return attributes.join('; ');
  }

  clearCookieHeader(): string {
    return `${this.cookieName}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0${this.options.isHttps ? '; Secure' : ''}`;
  }

  /**
   * When full: expired sessions go first, then (oldest first, Map order) sessions whose browser never came
   * back with the cookie (what a flood of /authorize leaves), then anonymous ones, then the oldest. An evicted
   * session is deleted from the store too.
   */
  private async evict(now: number): Promise<void> {
    if (this.sessions.size < this.maxSessions) return;
    const evicted: string[] = [];
    const drop = (id: string) => {
      this.sessions.delete(id);
      evicted.push(id);
    };
    for (const [id, session] of this.sessions) if (session.expiresAt <= now) this.sessions.delete(id);
    for (const isCandidate of [
      (session: BrowserSession) => !session.isSeen && !session.person,
      (session: BrowserSession) => !session.person,
      () => true,
    ]) {
      for (const [id, session] of this.sessions) {
        if (this.sessions.size < this.maxSessions) break;
        if (isCandidate(session)) drop(id);
      }
    }
    for (const id of evicted) await this.state.delete(KIND, this.keyOf(id));
  }
}

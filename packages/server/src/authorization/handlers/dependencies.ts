import type { FastifyBaseLogger } from 'fastify';
import type { PeopleDirectory } from '@gateway/runtime';
import type { PersonLogins } from '../../credentials/person/index.js';
import type { SharedEphemeralStore } from '../../store/shared-state.js';
import type { ConsentOffer } from '../consent/consent-tool.js';
import type { ClientRegistry } from '../oauth/clients.js';
import type { ThrottleStore } from '../oauth/rate-limit.js';
import type { AuthSettings } from '../oauth/settings.js';
import type { SigningKeySet } from '../oauth/signing-keys.js';
import type { AccessTokens } from '../oauth/tokens.js';
import type { BrowserSessions } from '../signin/browser-sessions.js';
import type { OidcSignIn } from '../signin/oidc.js';
import type { AuthorizationCodes, RefreshTokens, Sessions } from '../stores/ports.js';

/**
 * Everything the authorization server's endpoints use, built once by the composition root (../index.ts).
 * Each endpoint file takes the `Pick` of it that it needs, so its signature says what it touches.
 */
export interface AuthorizationDependencies {
  settings: AuthSettings;
  clients: ClientRegistry;
  sessions: Sessions;
  codes: AuthorizationCodes;
  refreshTokens: RefreshTokens;
  keys: SigningKeySet;
  tokens: AccessTokens;
  logger: FastifyBaseLogger;
  /** The tools and logins the consent page offers. */
  offer: ConsentOffer;
  people: PeopleDirectory;
  browserSessions: BrowserSessions;
  oidc?: OidcSignIn;
  /** Workers share pending requests through the database (`gateway serve --workers N`). */
  sharedPending?: SharedEphemeralStore;
  /** Per-person logins (`oauthPerson`): the connect page, and "Connect" on the consent page; absent when none. */
  personLogins?: Pick<PersonLogins, 'settings' | 'isLinked' | 'connectUrl' | 'linking'>;
  /** Where a throttle (sign-in failures, /authorize rate limits) keeps its counts: memory, or the database with workers. */
  throttleStore(kind: string): ThrottleStore;
}

import type { FastifyBaseLogger } from 'fastify';
import type { PeopleDirectory } from '@gateway/runtime';
import type { EphemeralState } from '../../store/ephemeral-state.js';
import type { PersonLogins } from '../../credentials/person/index.js';
import type { ConsentOffer } from '../consent/consent-tool.js';
import type { ClientRegistry } from '../oauth/clients.js';
import type { AuthSettings } from '../oauth/settings.js';
import type { SigningKeySet } from '../oauth/signing-keys.js';
import type { AccessTokens } from '../oauth/tokens.js';
import type { BrowserSessions } from '../signin/browser-sessions.js';
import type { OidcSignIn } from '../signin/oidc.js';
import type { AuthorizationCodes, RefreshTokens, Sessions, Throttles } from '../stores/ports.js';

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
  /** Where the pending requests are kept: memory, or the database the workers share (`gateway serve --workers N`). */
  ephemeral: EphemeralState;
  /** Where the throttles (sign-in failures, /authorize rate limits) keep their counts: memory, or the database with workers. */
  throttles: Throttles;
  /** Per-person logins (`oauthPerson`): the connect page, and "Connect" on the consent page; absent when none. */
  personLogins?: Pick<PersonLogins, 'settings' | 'isLinked' | 'connectUrl' | 'linking'>;
}

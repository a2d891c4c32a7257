/**
 * Credentials: how the gateway satisfies an operation's security requirements when it calls the upstream.
 *
 * A *login* is one configured credential, `sources.<source>.credentials.<securityScheme>`, named
 * `<source>/<securityScheme>` (an MCP source's per-person credential: `<source>/mcp`). Sessions hold login ids,
 * never values; values are read from the vault on every call, so rotating a secret changes what the next call
 * sends and never what a session may reach.
 */
import type { Dispatcher } from 'undici';
import {
  chooseLoginAlternative,
  compareText,
  loginAlternativesOf,
  loginIdOf,
  GatewayError,
  MCP_LOGIN_SCHEME,
  mcpLoginAlternatives,
  type CredentialConfig,
  type LoadedConfig,
  type LockedOperation,
  type Operation,
  type LoginAlternative,
  type SecurityRequirement,
} from '@gateway/core';
import { createClientCredentialsGrant, type Vault } from '@gateway/runtime';
import type { ExecutorCredentials } from '../execute/request.js';
import type { PersonLogins } from './person/index.js';

export interface CredentialResolver {
  /**
   * Credentials for one call: the first alternative of `operation.security` whose every scheme has a
   * configured credential and whose logins are all in `allowedLogins`.
   * Throws CREDENTIAL_NOT_AVAILABLE or LOGIN_NOT_IN_SESSION (category auth). `person`: the session's person,
   * whose own token a per-person login carries (PERSON_LOGIN_NOT_LINKED without one).
   */
  resolve(
    sourceName: string,
    operation: LockedOperation,
    allowedLogins: ReadonlySet<string>,
    person?: string,
  ): Promise<ExecutorCredentials>;
  /** Drops cached OAuth tokens of a login (e.g. after the upstream answered 401). */
  forgetTokens(loginId: string): void;
}

export interface CredentialResolverOptions {
  loaded: LoadedConfig;
  vault: Vault;
  /** The SSRF-guarded agent token requests go through. */
  fetchDispatcher?: Dispatcher;
  /** Clock (ms), for tests of token expiry. */
  now?: () => number;
  /** Each person's tokens of per-person logins (./person/); absent when none is configured. */
  personLogins?: Pick<PersonLogins, 'accessToken'>;
}

/** A login (a configured credential) as the consent page lists it, for a person to allow a session to use. */
export interface LoginSummary {
  /** `<source>/<securityScheme>`. */
  id: string;
  source: string;
  scheme: string;
  type: CredentialConfig['type'];
}

/** `<source>/<securityScheme>` (the one definition is core's). */
export { loginIdOf };

/**
 * Every login the config offers (credentials of type `none` need no consent and are not logins). An MCP source
 * offers one only when its credential is per person (`<source>/mcp`): the gateway's own is no person's to grant.
 */
export function listLogins(loaded: LoadedConfig): LoginSummary[] {
  const logins: LoginSummary[] = [];
  for (const [source, settings] of Object.entries(loaded.config.sources)) {
    if (settings.kind === 'mcp') {
      if (settings.credentials?.type === 'oauthPerson') {
        logins.push({ id: loginIdOf(source, MCP_LOGIN_SCHEME), source, scheme: MCP_LOGIN_SCHEME, type: 'oauthPerson' });
      }
      continue;
    }
    for (const [scheme, credential] of Object.entries(settings.credentials ?? {})) {
      if (credential.type === 'none') continue;
      logins.push({ id: loginIdOf(source, scheme), source, scheme, type: credential.type });
    }
  }
  return logins.sort((a, b) => compareText(a.id, b.id));
}

/** The login ids calling a tool of an MCP source needs: its per-person login, or none (for the consent page). */
export function mcpToolLogins(loaded: LoadedConfig, sourceName: string): string[] {
  const source = loaded.config.sources[sourceName];
  return source?.kind === 'mcp' ? mcpLoginAlternatives(sourceName, source.credentials).flatMap((alternative) => alternative.logins) : [];
}

/** An OpenAPI source's credentials by security scheme (an MCP source's credentials are not per scheme). */
function openApiCredentials(loaded: LoadedConfig, sourceName: string): Record<string, CredentialConfig> {
  const source = loaded.config.sources[sourceName];
  return source?.kind === 'openapi' ? (source.credentials ?? {}) : {};
}

/** The login ids any satisfiable alternative of an operation would use (for the consent page). */
export function operationLogins(loaded: LoadedConfig, sourceName: string, operation: Pick<Operation, 'security'>): string[] {
  const ids = new Set<string>();
  for (const alternative of loginAlternativesOf(sourceName, operation.security, openApiCredentials(loaded, sourceName))) {
    for (const id of alternative.logins) ids.add(id);
  }
  return [...ids].sort();
}

/** What applying one credential needs: the resolver's options, its client-credentials grant, the vault lookup. */
interface CredentialContext {
  options: CredentialResolverOptions;
  grant: ReturnType<typeof createClientCredentialsGrant>;
  secretOf(loginId: string, name: string): Promise<string>;
}

/** Puts one scheme's credential on the request (`target`), after checking it fits the scheme. */
async function applyCredential(
  context: CredentialContext,
  target: ExecutorCredentials & { personSubjects: Record<string, string | null> },
  sourceName: string,
  operation: LockedOperation,
  schemeName: string,
  requiredScopes: string[],
  credential: CredentialConfig,
  person: string | undefined,
): Promise<void> {
  const loginId = loginIdOf(sourceName, schemeName);
  const scheme = operation.securitySchemes[schemeName];
  const mismatch = (expected: string): GatewayError =>
    new GatewayError(
      'CREDENTIAL_SCHEME_MISMATCH',
      `sources.${sourceName}.credentials.${schemeName}: a ${credential.type} credential cannot satisfy ` +
        `the security scheme '${schemeName}' (${scheme ? describeScheme(scheme) : 'not in the lock'}); it needs ${expected}`,
      { details: { login: loginId } },
    );
  switch (credential.type) {
    case 'none':
      return;
    case 'apiKey': {
      if (scheme?.type !== 'apiKey' || !scheme.name || !scheme.in) throw mismatch('a scheme of type apiKey');
      const value = await context.secretOf(loginId, credential.secret);
      if (scheme.in === 'header') target.headers[scheme.name.toLowerCase()] = value;
      else if (scheme.in === 'query') target.query[scheme.name] = value;
      else target.cookies[scheme.name] = value;
      return;
    }
    case 'bearer': {
      if (!isBearerScheme(scheme)) throw mismatch('an http bearer, oauth2 or openIdConnect scheme');
      target.headers.authorization = `Bearer ${await context.secretOf(loginId, credential.secret)}`;
      return;
    }
    case 'basic': {
      if (scheme?.type !== 'http' || scheme.scheme?.toLowerCase() !== 'basic') throw mismatch('an http basic scheme');
      // RFC 7617 §2: the user-id cannot contain a colon; the password may.
      if (credential.username.includes(':')) {
        throw new GatewayError(
          'CREDENTIAL_INVALID',
          `sources.${sourceName}.credentials.${schemeName}.username must not contain ':' (RFC 7617)`,
          { details: { login: loginId } },
        );
      }
      const password = await context.secretOf(loginId, credential.secret);
      target.headers.authorization = `Basic ${Buffer.from(`${credential.username}:${password}`, 'utf8').toString('base64')}`;
      return;
    }
    case 'oauthClientCredentials': {
      if (!isBearerScheme(scheme)) throw mismatch('an oauth2, openIdConnect or http bearer scheme');
      const tokenUrl = credential.tokenUrl ?? scheme?.tokenUrl;
      if (!tokenUrl) {
        throw new GatewayError(
          'CREDENTIAL_TOKEN_URL_MISSING',
          `sources.${sourceName}.credentials.${schemeName}: no token URL: the scheme has no client credentials flow; set tokenUrl`,
          { details: { login: loginId } },
        );
      }
      const scopes = credential.scopes ?? requiredScopes;
      const token = await context.grant.token({
        requester: loginId,
        tokenUrl,
        clientId: credential.clientId,
        clientSecret: () => context.secretOf(loginId, credential.secret),
        scopes,
        ...(context.options.fetchDispatcher ? { dispatcher: context.options.fetchDispatcher } : {}),
      });
      target.headers.authorization = `Bearer ${token}`;
      return;
    }
    case 'oauthPerson': {
      if (!isBearerScheme(scheme)) throw mismatch('an oauth2, openIdConnect or http bearer scheme');
      // Only the session's person's own token: never another person's, never one of the gateway's.
      if (person === undefined || !context.options.personLogins) {
        throw new GatewayError('PERSON_LOGIN_NOT_LINKED', `the login ${loginId} is per person, and this call has no person`, {
          details: { login: loginId },
        });
      }
      const { token, subject } = await context.options.personLogins.accessToken(person, loginId);
      target.headers.authorization = `Bearer ${token}`;
      // Receipts record the login used as that person's account at the provider (docs/receipts.md).
      target.personSubjects[loginId] = subject;
      return;
    }
    default: {
      // A credential type added to the config schema must be applied here before it compiles; without this,
      // requests would silently go out without credentials.
      const unreachable: never = credential;
      throw new GatewayError('INTERNAL_ERROR', `unhandled credential type ${JSON.stringify((unreachable as { type?: unknown }).type)}`);
    }
  }
}

export function createCredentialResolver(options: CredentialResolverOptions): CredentialResolver {
  const { loaded, vault } = options;
  const grant = createClientCredentialsGrant(options.now ? { now: options.now } : {});

  async function secretOf(loginId: string, name: string): Promise<string> {
    const value = await vault.get(name);
    if (value === undefined || value === '') {
      throw new GatewayError(
        'CREDENTIAL_SECRET_MISSING',
        `the login ${loginId} needs the secret '${name}', which the vault does not hold; store it with \`gateway secrets set ${name}\``,
        { details: { login: loginId, secret: name } },
      );
    }
    return value;
  }

  const context: CredentialContext = { options, grant, secretOf };
  // Per operation object (a publication's operations never change, nor does `loaded` for this resolver).
  const alternativesCache = new WeakMap<LockedOperation, Array<LoginAlternative & { requirement: SecurityRequirement }>>();
  return {
    async resolve(sourceName, operation, allowedLogins, person) {
      const credentials = openApiCredentials(loaded, sourceName);
      let alternatives = alternativesCache.get(operation);
      if (alternatives === undefined) {
        alternatives = loginAlternativesOf(sourceName, operation.security, credentials);
        alternativesCache.set(operation, alternatives);
      }
      // The one login-choice rule (core's chooseLoginAlternative), the one the call decision applied.
      const choice = chooseLoginAlternative(alternatives, allowedLogins);
      if (choice.chosen) {
        const { schemes, logins, requirement } = choice.chosen;
        const resolved: ExecutorCredentials & { personSubjects: Record<string, string | null> } = {
          headers: {},
          query: {},
          cookies: {},
          loginId: null,
          personSubjects: {},
        };
        for (const scheme of schemes) {
          await applyCredential(context, resolved, sourceName, operation, scheme, requirement[scheme] ?? [], credentials[scheme]!, person);
        }
        const { headers, query, cookies, personSubjects } = resolved;
        return { headers, query, cookies, loginId: loginIdText(logins, personSubjects) };
      }
      if (choice.missing.length > 0) {
        const notInSession = choice.missing;
        throw new GatewayError(
          'LOGIN_NOT_IN_SESSION',
          `calling ${operation.tool} needs the login ${notInSession.join(' and ')}, which this session was not granted`,
          { details: { tool: operation.tool, logins: notInSession } },
        );
      }
      // OpenAPI: an empty `security` array means no security; `{}` inside it makes security optional.
      const requirements: SecurityRequirement[] = operation.security.length === 0 ? [{}] : operation.security;
      const wanted = requirements.map((alternative) => Object.keys(alternative).join(' + ') || '(none)').join(' or ');
      throw new GatewayError(
        'CREDENTIAL_NOT_AVAILABLE',
        `no credential is configured for ${operation.tool}: it needs ${wanted}; add one under sources.${sourceName}.credentials`,
        { details: { tool: operation.tool, source: sourceName } },
      );
    },

    forgetTokens(loginId) {
      grant.forget(loginId);
    },
  };
}

/**
 * The login a receipt records: the login ids joined by `+`, a per-person login followed by ` sub=<subject>`, the
 * person's subject at the provider (`?` when the provider did not tell it); null when none was needed.
 */
function loginIdText(logins: readonly string[], personSubjects: Readonly<Record<string, string | null>>): string | null {
  if (logins.length === 0) return null;
  return logins.map((login) => (Object.hasOwn(personSubjects, login) ? `${login} sub=${personSubjects[login] ?? '?'}` : login)).join('+');
}

/** Schemes whose requests carry `Authorization: Bearer` (RFC 6750 §2.1). */
function isBearerScheme(scheme: LockedOperation['securitySchemes'][string] | undefined): boolean {
  if (!scheme) return false;
  if (scheme.type === 'http') return scheme.scheme?.toLowerCase() === 'bearer';
  return scheme.type === 'oauth2' || scheme.type === 'openIdConnect';
}

function describeScheme(scheme: LockedOperation['securitySchemes'][string]): string {
  if (scheme.type === 'apiKey') return `apiKey in ${scheme.in ?? '?'}`;
  if (scheme.type === 'http') return `http ${scheme.scheme ?? ''}`.trim();
  return scheme.type;
}

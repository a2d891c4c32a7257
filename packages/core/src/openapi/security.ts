/**
 * Security requirements and the schemes they name. OAS 3.x §4.8.10 (Operation `security`): an operation's list
 * replaces the document's; `[]` removes security; `{}` in the list makes security optional. Requirements in the
 * list are alternatives (OR); the schemes inside one requirement are all needed (AND).
 */
import type { SecurityRequirement, SecuritySchemeSummary } from '../model.js';
import { UnresolvableReferenceError, isObject, resolveObject } from './references.js';

export interface SecurityResolution {
  security: SecurityRequirement[];
  securitySchemes: Record<string, SecuritySchemeSummary>;
  /** Set when no alternative can be satisfied by a credential the gateway holds. */
  unsupported: string | null;
}

/**
 * OAuth 2 flows the gateway can obtain tokens for: per person (authorization code) or as a service account.
 * An `openIdConnect` scheme is satisfiable too: its credential names the provider (docs/credentials.md).
 */
const SUPPORTED_OAUTH_FLOWS = new Set(['clientCredentials', 'authorizationCode']);
const SUPPORTED_HTTP_SCHEMES = new Set(['basic', 'bearer']);

export function summariseScheme(scheme: Record<string, unknown>): SecuritySchemeSummary {
  const type = typeof scheme.type === 'string' ? scheme.type : 'unknown';
  const summary: SecuritySchemeSummary = { type };
  if (type === 'apiKey') {
    if (scheme.in === 'header' || scheme.in === 'query' || scheme.in === 'cookie') summary.in = scheme.in;
    if (typeof scheme.name === 'string') summary.name = scheme.name;
  } else if (type === 'http') {
    // RFC 9110 §11.1: the authentication scheme name is case-insensitive.
    if (typeof scheme.scheme === 'string') summary.scheme = scheme.scheme.toLowerCase();
    if (typeof scheme.bearerFormat === 'string') summary.bearerFormat = scheme.bearerFormat;
  } else if (type === 'oauth2') {
    const flows = isObject(scheme.flows) ? scheme.flows : {};
    summary.flows = Object.keys(flows)
      .filter((name) => !name.startsWith('x-'))
      .sort();
    const clientCredentials = flows.clientCredentials;
    if (isObject(clientCredentials) && typeof clientCredentials.tokenUrl === 'string') {
      summary.tokenUrl = clientCredentials.tokenUrl;
    }
  } else if (type === 'openIdConnect') {
    if (typeof scheme.openIdConnectUrl === 'string') summary.openIdConnectUrl = scheme.openIdConnectUrl;
  }
  return summary;
}

/** Why the gateway cannot satisfy a scheme, or null when it can. */
export function schemeProblem(name: string, summary: SecuritySchemeSummary): string | null {
  switch (summary.type) {
    case 'apiKey':
      return summary.in && summary.name ? null : `the apiKey scheme "${name}" has no valid "in" and "name"`;
    case 'http':
      return summary.scheme && SUPPORTED_HTTP_SCHEMES.has(summary.scheme)
        ? null
        : `the http scheme "${name}" uses "${summary.scheme ?? '?'}", only basic and bearer are supported`;
    case 'oauth2':
      return (summary.flows ?? []).some((flow) => SUPPORTED_OAUTH_FLOWS.has(flow))
        ? null
        : `the oauth2 scheme "${name}" offers only ${(summary.flows ?? []).join(', ') || 'no'} flows; ` +
            'clientCredentials or authorizationCode is needed';
    case 'openIdConnect':
      // A bearer token from the provider: a person's own (`oauthPerson`, which finds the provider by discovery), or
      // one of the gateway's (`bearer`, `oauthClientCredentials` with its tokenUrl).
      return null;
    case 'mutualTLS':
      return `the mutualTLS scheme "${name}" is not supported (client certificates)`;
    default:
      return `the security scheme "${name}" has the unknown type "${summary.type}"`;
  }
}

function requirementsOf(value: unknown): SecurityRequirement[] {
  if (!Array.isArray(value)) return [];
  return value.filter(isObject).map((requirement) =>
    Object.fromEntries(
      Object.keys(requirement)
        .sort()
        .map((name) => {
          const scopes = requirement[name];
          return [name, Array.isArray(scopes) ? scopes.filter((scope): scope is string => typeof scope === 'string') : []];
        }),
    ),
  );
}

export function resolveSecurity(document: Record<string, unknown>, operation: Record<string, unknown>): SecurityResolution {
  const security = requirementsOf(Array.isArray(operation.security) ? operation.security : document.security);
  const declared =
    isObject(document.components) && isObject(document.components.securitySchemes) ? document.components.securitySchemes : {};
  // Scheme names come from the document: a Map, so a scheme named `__proto__` is not lost on assignment.
  const securitySchemes = new Map<string, SecuritySchemeSummary>();
  const problems = new Map<string, string | null>();
  for (const name of [...new Set(security.flatMap((requirement) => Object.keys(requirement)))].sort()) {
    if (!Object.hasOwn(declared, name)) {
      throw new UnresolvableReferenceError(
        `#/components/securitySchemes/${name}`,
        `the security scheme "${name}" is not declared in components.securitySchemes`,
      );
    }
    const summary = summariseScheme(resolveObject(document, declared[name]));
    securitySchemes.set(name, summary);
    problems.set(name, schemeProblem(name, summary));
  }
  const schemes = Object.fromEntries(securitySchemes);
  if (security.length === 0) return { security, securitySchemes: schemes, unsupported: null };
  const satisfiable = security.some((requirement) => Object.keys(requirement).every((name) => problems.get(name) === null));
  const firstProblem = [...problems.values()].find((problem) => problem !== null) ?? null;
  return { security, securitySchemes: schemes, unsupported: satisfiable ? null : firstProblem };
}

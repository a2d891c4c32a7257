/**
 * The `auth` section of gateway.yaml: how people sign in, which clients may ask for access, how long
 * sessions and tokens live. docs/authorization.md explains every key.
 */

const positiveSeconds = { type: 'integer', minimum: 1 } as const;

export const authSchema = {
  type: 'object',
  description: 'sign-in, consent and sessions (docs/authorization.md)',
  additionalProperties: false,
  properties: {
    local: {
      type: 'object',
      additionalProperties: false,
      description: 'local accounts (`gateway people add`), the embedded default',
      properties: {
        enabled: { type: 'boolean', default: true },
        file: { type: 'string', description: 'people file, relative to gateway.yaml (default <dataDirectory>/people.json)' },
      },
    },
    oidc: {
      type: 'object',
      required: ['issuer', 'clientId'],
      additionalProperties: false,
      description: "sign-in through the company's OpenID Connect provider",
      properties: {
        issuer: { type: 'string', format: 'uri' },
        clientId: { type: 'string', minLength: 1 },
        clientSecret: { type: 'string', minLength: 1, description: 'vault name of the client secret (omit for a public client)' },
        label: { type: 'string', description: 'button text, default "Sign in with <issuer host>"' },
        scopes: { type: 'array', items: { type: 'string' }, description: 'default openid email profile' },
        allowedDomains: {
          type: 'array',
          items: { type: 'string' },
          description: 'only people whose verified email ends in one of these domains may sign in',
        },
        operators: {
          type: 'object',
          required: ['claim', 'values'],
          additionalProperties: false,
          description: 'people signed in through OIDC get the operator role (the console) when this claim holds one of these values',
          properties: {
            claim: { type: 'string', minLength: 1, description: 'an ID token or userinfo claim, e.g. groups or roles' },
            values: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
          },
        },
      },
    },
    clients: {
      type: 'array',
      description: 'pre-registered clients',
      items: {
        type: 'object',
        required: ['clientId', 'name', 'redirectUris'],
        additionalProperties: false,
        properties: {
          clientId: { type: 'string', minLength: 1, pattern: '^[\\x21-\\x7e]+$' },
          name: { type: 'string', minLength: 1 },
          redirectUris: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
          secret: { type: 'string', minLength: 1, description: 'vault name of the client secret (confidential clients)' },
        },
      },
    },
    clientMetadata: {
      type: 'object',
      additionalProperties: false,
      description: 'Client ID Metadata Documents (client_id is an https URL)',
      properties: {
        enabled: { type: 'boolean', default: true },
        maxBytes: { type: 'integer', minimum: 512, default: 16384 },
        timeoutMs: { type: 'integer', minimum: 100, default: 5000 },
        maxCacheSeconds: { type: 'integer', minimum: 0, default: 86400 },
        caCertificates: {
          type: 'array',
          items: { type: 'string' },
          description: 'PEM files (relative to gateway.yaml) trusted in addition to the system roots when fetching documents',
        },
      },
    },
    registration: {
      type: 'object',
      additionalProperties: false,
      description: 'Dynamic Client Registration (RFC 7591)',
      properties: {
        enabled: { type: 'boolean', default: true },
        perIpPerHour: { type: 'integer', minimum: 1, default: 20 },
        unusedExpirySeconds: { ...positiveSeconds, default: 86400 },
        idleExpirySeconds: { ...positiveSeconds, default: 7776000 },
      },
    },
    authorize: {
      type: 'object',
      additionalProperties: false,
      description: 'bounds on /authorize, which anyone can call; over a limit it answers 429 with Retry-After',
      properties: {
        perAddressPerMinute: { type: 'integer', minimum: 1, default: 60, description: 'requests per client address per minute' },
        perClientPerMinute: { type: 'integer', minimum: 1, default: 600, description: 'requests per client_id per minute' },
        maxPendingPerClient: {
          type: 'integer',
          minimum: 1,
          default: 1000,
          description: 'requests of one client waiting for sign-in or consent',
        },
        maxPending: { type: 'integer', minimum: 1, default: 10000, description: 'requests waiting for sign-in or consent, all clients' },
      },
    },
    sessions: {
      type: 'object',
      additionalProperties: false,
      properties: {
        maxLifetimeSeconds: { ...positiveSeconds, default: 604800 },
        lifetimeChoicesSeconds: {
          type: 'array',
          minItems: 1,
          items: positiveSeconds,
          description: 'time limits offered on the consent page (default 15 min, 1 h, 8 h, 24 h, 7 days)',
        },
      },
    },
    tokens: {
      type: 'object',
      additionalProperties: false,
      properties: {
        accessTokenSeconds: { ...positiveSeconds, maximum: 3600, default: 600 },
        refreshReuseGraceSeconds: {
          type: 'integer',
          minimum: 0,
          maximum: 300,
          default: 60,
          description:
            'a rotated refresh token presented again this soon, its successor unused, gets a new successor instead of revoking (0: never)',
        },
        signingKeyMaxAgeDays: { type: 'integer', minimum: 1, default: 90 },
      },
    },
    signIn: {
      type: 'object',
      additionalProperties: false,
      properties: {
        browserSessionSeconds: { ...positiveSeconds, default: 28800 },
        maxFailedAttempts: { type: 'integer', minimum: 1, default: 5 },
        lockoutSeconds: { ...positiveSeconds, default: 900 },
      },
    },
  },
} as const;

export interface AuthConfig {
  local?: { enabled?: boolean; file?: string };
  oidc?: {
    issuer: string;
    clientId: string;
    clientSecret?: string;
    label?: string;
    scopes?: string[];
    allowedDomains?: string[];
    /** The claim (string or array of strings) whose values make an OIDC-signed-in person an operator. */
    operators?: { claim: string; values: string[] };
  };
  clients?: Array<{ clientId: string; name: string; redirectUris: string[]; secret?: string }>;
  clientMetadata?: { enabled?: boolean; maxBytes?: number; timeoutMs?: number; maxCacheSeconds?: number; caCertificates?: string[] };
  registration?: { enabled?: boolean; perIpPerHour?: number; unusedExpirySeconds?: number; idleExpirySeconds?: number };
  authorize?: { perAddressPerMinute?: number; perClientPerMinute?: number; maxPendingPerClient?: number; maxPending?: number };
  sessions?: { maxLifetimeSeconds?: number; lifetimeChoicesSeconds?: number[] };
  tokens?: { accessTokenSeconds?: number; refreshReuseGraceSeconds?: number; signingKeyMaxAgeDays?: number };
  signIn?: { browserSessionSeconds?: number; maxFailedAttempts?: number; lockoutSeconds?: number };
}

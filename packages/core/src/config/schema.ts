/**
 * The JSON Schema of gateway.yaml (docs/config.md documents every key; `gateway init` writes a starter).
 * Each section is its own constant so the areas that own it can be read on their own.
 */

import { authSchema } from './auth-schema.js';
import { receiptsSchema } from './receipts-schema.js';
import { storageSchema } from './storage-schema.js';
import { telemetrySchema } from './telemetry-schema.js';
import { webhooksSchema } from './webhooks-schema.js';

const duration = { type: 'integer', minimum: 1 } as const;

/** OAuth per person, for a security scheme of an OpenAPI source or for an MCP source whose server requires OAuth. */
const oauthPersonCredentialSchema = {
  type: 'object',
  description: "OAuth per person: each person links their own account; calls carry that person's token",
  required: ['type', 'clientId', 'secret'],
  additionalProperties: false,
  properties: {
    type: { const: 'oauthPerson' },
    issuer: { type: 'string', format: 'uri', description: 'the provider, found by RFC 8414 / OpenID discovery' },
    authorizationUrl: { type: 'string', format: 'uri', description: 'without issuer: the authorization endpoint' },
    tokenUrl: { type: 'string', format: 'uri', description: 'without issuer: the token endpoint' },
    clientId: { type: 'string', minLength: 1 },
    secret: { type: 'string', minLength: 1, description: 'vault name of the client secret' },
    scopes: { type: 'array', items: { type: 'string' } },
    resource: {
      type: 'string',
      format: 'uri',
      description: 'RFC 8707 resource indicator sent to the provider (an MCP source: its url when left out)',
    },
    label: { type: 'string', minLength: 1, description: 'the provider as the consent page names it' },
  },
} as const;

export const credentialSchema = {
  description: 'How the gateway satisfies one security scheme of the source. Secrets are names in the vault, never values.',
  oneOf: [
    {
      type: 'object',
      required: ['type'],
      additionalProperties: false,
      properties: { type: { const: 'none' } },
    },
    {
      type: 'object',
      required: ['type', 'secret'],
      additionalProperties: false,
      properties: { type: { enum: ['apiKey', 'bearer'] }, secret: { type: 'string', minLength: 1 } },
    },
    {
      type: 'object',
      required: ['type', 'username', 'secret'],
      additionalProperties: false,
      properties: { type: { const: 'basic' }, username: { type: 'string' }, secret: { type: 'string', minLength: 1 } },
    },
    {
      type: 'object',
      required: ['type', 'clientId', 'secret'],
      additionalProperties: false,
      properties: {
        type: { const: 'oauthClientCredentials' },
        clientId: { type: 'string', minLength: 1 },
        secret: { type: 'string', minLength: 1, description: 'vault name of the client secret' },
        tokenUrl: { type: 'string', format: 'uri', description: 'overrides the tokenUrl of the scheme' },
        scopes: { type: 'array', items: { type: 'string' } },
      },
    },
    oauthPersonCredentialSchema,
  ],
} as const;

const timeoutsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { connectMs: duration, totalMs: duration },
} as const;

export const openApiSourceSchema = {
  type: 'object',
  required: ['kind', 'document'],
  additionalProperties: false,
  properties: {
    kind: { const: 'openapi' },
    document: {
      type: 'string',
      minLength: 1,
      description: 'a path relative to gateway.yaml, or an https URL (http only for loopback hosts)',
    },
    server: {
      description:
        'replaces the servers of the document for calls (and so in the signed lock): an absolute http(s) URL, ' +
        'or values for the server variables of the document',
      oneOf: [
        { type: 'string', pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^\\s]+$' },
        {
          type: 'object',
          required: ['variables'],
          additionalProperties: false,
          properties: {
            variables: { type: 'object', minProperties: 1, additionalProperties: { type: 'string' } },
          },
        },
      ],
    },
    allowRemoteRefs: {
      type: 'boolean',
      default: false,
      description: 'allow $ref to other URLs than the document itself (off: only refs inside the document or beside a local file)',
    },
    credentials: {
      type: 'object',
      description: 'security scheme name → credential',
      additionalProperties: credentialSchema,
    },
    timeouts: timeoutsSchema,
    maxResponseBytes: { type: 'integer', minimum: 1 },
  },
} as const;

/** A credential of the gateway's own for an MCP endpoint: the same value on every person's calls. */
export const mcpOwnCredentialSchema = {
  description: "A credential of the gateway's own for an MCP endpoint. Secrets are names in the vault, never values.",
  type: 'object',
  required: ['type'],
  properties: { type: { enum: ['none', 'bearer', 'apiKey', 'oauthClientCredentials'] } },
  allOf: [
    {
      if: { properties: { type: { const: 'none' } } },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword, not a thenable
      then: { additionalProperties: false, properties: { type: true } },
    },
    {
      if: { properties: { type: { const: 'bearer' } } },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword, not a thenable
      then: { required: ['secret'], additionalProperties: false, properties: { type: true, secret: { type: 'string', minLength: 1 } } },
    },
    {
      if: { properties: { type: { const: 'apiKey' } } },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword, not a thenable
      then: {
        required: ['secret', 'header'],
        additionalProperties: false,
        properties: {
          type: true,
          secret: { type: 'string', minLength: 1 },
          header: { type: 'string', pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$", description: 'the request header the key goes in' },
        },
      },
    },
    {
      if: { properties: { type: { const: 'oauthClientCredentials' } } },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword, not a thenable
      then: {
        required: ['clientId', 'secret', 'tokenUrl'],
        additionalProperties: false,
        properties: {
          type: true,
          clientId: { type: 'string', minLength: 1 },
          secret: { type: 'string', minLength: 1, description: 'vault name of the client secret' },
          tokenUrl: { type: 'string', format: 'uri' },
          scopes: { type: 'array', items: { type: 'string' } },
        },
      },
    },
  ],
} as const;

/**
 * How the gateway authenticates to an MCP endpoint: a credential of its own, or `oauthPerson` (each person's own
 * token, docs/credentials.md).
 */
export const mcpCredentialSchema = {
  description:
    "How the gateway authenticates to an MCP endpoint: a credential of the gateway's own, or oauthPerson (each person's own " +
    'account). Secrets are names in the vault, never values.',
  type: 'object',
  required: ['type'],
  properties: { type: { enum: [...mcpOwnCredentialSchema.properties.type.enum, 'oauthPerson'] } },
  allOf: [
    ...mcpOwnCredentialSchema.allOf,
    {
      if: { properties: { type: { const: 'oauthPerson' } } },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword, not a thenable
      then: oauthPersonCredentialSchema,
    },
  ],
} as const;

export const mcpSourceSchema = {
  type: 'object',
  required: ['kind'],
  additionalProperties: false,
  properties: {
    kind: { const: 'mcp' },
    command: {
      type: 'array',
      minItems: 1,
      items: { type: 'string', minLength: 1 },
      description: 'connected over stdio: argv of the server process (relative paths resolve against gateway.yaml)',
    },
    env: {
      type: 'object',
      propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
      additionalProperties: {
        type: 'object',
        required: ['secret'],
        additionalProperties: false,
        properties: { secret: { type: 'string', minLength: 1, description: 'vault name of the value' } },
      },
      description: 'environment of a stdio server: NAME → { secret: vault-name } (never an inline value)',
    },
    url: {
      type: 'string',
      minLength: 1,
      description: 'Streamable HTTP (or HTTP+SSE) endpoint: https, or http only for loopback hosts',
    },
    credentials: mcpCredentialSchema,
    listingCredentials: {
      ...mcpOwnCredentialSchema,
      description:
        "with credentials of type oauthPerson: a credential of the gateway's own used only to list the server's tools (import, " +
        'diff, the rug-pull defence), never for a call; without it, listing sends no credential',
    },
    caCertificates: {
      type: 'array',
      minItems: 1,
      items: { type: 'string', minLength: 1 },
      description: "PEM files (relative to gateway.yaml) of CAs trusted for this 'url' source, besides the public roots",
    },
    timeouts: timeoutsSchema,
    maxResponseBytes: { type: 'integer', minimum: 1 },
    relistIntervalSeconds: {
      type: 'number',
      exclusiveMinimum: 0,
      description: 'how often the server re-lists tools (default drift.intervalSeconds)',
    },
  },
} as const;

/** A source: `kind` picks the schema, so an unknown kind names the allowed ones. */
export const sourceSchema = {
  type: 'object',
  required: ['kind'],
  properties: { kind: { enum: ['openapi', 'mcp'] } },
  allOf: [
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword, not a thenable
    { if: { properties: { kind: { const: 'openapi' } } }, then: openApiSourceSchema },
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword, not a thenable
    { if: { properties: { kind: { const: 'mcp' } } }, then: mcpSourceSchema },
  ],
} as const;

/**
 * Where a setting that cannot come from the vault itself is read (the vault database's connection string, the
 * key-encryption key): exactly one of an environment variable, a file, or a command's stdout.
 */
export const settingSourceSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  maxProperties: 2,
  properties: {
    env: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]{0,255}$', description: 'environment variable holding the value' },
    file: { type: 'string', minLength: 1, maxLength: 4096, description: 'file holding the value, relative to gateway.yaml' },
    exec: { type: 'array', minItems: 1, items: { type: 'string' }, description: 'argv of a command that prints the value' },
    timeoutMs: { ...duration, description: 'with exec: time limit of the command (default 5000)' },
  },
  oneOf: [{ required: ['env'] }, { required: ['file'] }, { required: ['exec'] }],
  dependentSchemas: { timeoutMs: { required: ['exec'] } },
} as const;

export const vaultSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    provider: { enum: ['file', 'env', 'exec', 'postgres'], default: 'file' },
    file: {
      type: 'object',
      additionalProperties: false,
      properties: {
        path: { type: 'string', description: 'encrypted vault file, relative to gateway.yaml' },
        keyEnv: { type: 'string', description: 'environment variable holding the base64 256-bit key' },
        keyFile: { type: 'string', description: 'a 0600 file holding the base64 256-bit key' },
      },
    },
    env: {
      type: 'object',
      additionalProperties: false,
      properties: { prefix: { type: 'string', default: 'GATEWAY_SECRET_' } },
    },
    exec: {
      type: 'object',
      required: ['command'],
      additionalProperties: false,
      properties: {
        command: { type: 'array', minItems: 1, items: { type: 'string' }, description: 'argv; the secret name is appended' },
        timeoutMs: duration,
      },
    },
    postgres: {
      type: 'object',
      required: ['url', 'key'],
      additionalProperties: false,
      description: 'a vault several replicas share: its own PostgreSQL database and role, every value envelope-encrypted (docs/vault.md)',
      properties: {
        url: {
          ...settingSourceSchema,
          description: "where the vault database's connection string is read (postgres://user:password@host:port/database)",
        },
        key: { ...settingSourceSchema, description: 'where the key-encryption key (base64, 32 bytes) is read; never in a database' },
        previousKeys: {
          type: 'array',
          maxItems: 16,
          items: settingSourceSchema,
          description: 'earlier key-encryption keys, still accepted for reading values sealed under them',
        },
      },
    },
  },
  if: { properties: { provider: { const: 'postgres' } }, required: ['provider'] },
  // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword, not a thenable
  then: { required: ['postgres'] },
} as const;

export const configSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://gateway.dev/schemas/gateway-config.schema.json',
  title: 'gateway.yaml',
  type: 'object',
  required: ['gateway', 'sources'],
  additionalProperties: false,
  properties: {
    gateway: {
      type: 'object',
      required: ['url'],
      additionalProperties: false,
      properties: {
        url: { type: 'string', format: 'uri', description: 'canonical base URL; /mcp is served below it' },
        listen: { type: 'string', description: 'host:port to listen on (default 127.0.0.1:8080)' },
        tls: {
          type: 'object',
          required: ['cert', 'key'],
          additionalProperties: false,
          properties: { cert: { type: 'string' }, key: { type: 'string' } },
        },
        allowedOrigins: { type: 'array', items: { type: 'string' }, description: 'extra Origins allowed on /mcp' },
        dataDirectory: { type: 'string', description: 'database and runtime state (default .gateway beside the config)' },
        maxRequestBytes: { type: 'integer', minimum: 1024 },
        trustedProxies: {
          type: 'array',
          items: { type: 'string', minLength: 1 },
          description: 'reverse proxies (addresses or CIDR ranges) whose X-Forwarded-For names the client address',
        },
      },
    },
    sources: {
      type: 'object',
      propertyNames: { pattern: '^[a-z0-9][a-z0-9_-]{0,63}$' },
      additionalProperties: sourceSchema,
    },
    trust: {
      type: 'object',
      additionalProperties: false,
      properties: { keys: { type: 'array', items: { type: 'string' }, description: 'public JWK files trusted to sign publications' } },
    },
    import: {
      type: 'object',
      additionalProperties: false,
      properties: {
        maxDocumentBytes: { type: 'integer', minimum: 1, description: 'default 26214400 (25 MiB)' },
        timeoutMs: duration,
      },
    },
    network: {
      type: 'object',
      additionalProperties: false,
      properties: {
        allowPrivateNetworks: {
          type: 'array',
          items: { type: 'string' },
          description: 'CIDR ranges the SSRF guard lets through (e.g. 127.0.0.1/32 for a local upstream)',
        },
      },
    },
    vault: vaultSchema,
    storage: storageSchema,
    admin: {
      type: 'object',
      additionalProperties: false,
      properties: { tokenSecret: { type: 'string', description: 'vault name of the admin API token', default: 'admin-token' } },
    },
    drift: {
      type: 'object',
      additionalProperties: false,
      properties: { intervalSeconds: { type: 'number', exclusiveMinimum: 0, default: 60 }, enabled: { type: 'boolean', default: true } },
    },
    approvals: {
      type: 'object',
      additionalProperties: false,
      description: 'one-call approvals of tools reviewed `approval: each-call` (docs/approvals.md)',
      properties: {
        expirySeconds: {
          type: 'integer',
          minimum: 10,
          maximum: 86400,
          default: 600,
          description: 'how long a person has to answer, and an approved call to run',
        },
      },
    },
    auth: authSchema,
    receipts: receiptsSchema,
    webhooks: webhooksSchema,
    telemetry: telemetrySchema,
  },
} as const;

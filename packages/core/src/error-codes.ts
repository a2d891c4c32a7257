/**
 * Every error code the gateway reports, declared once: its category (which decides the CLI exit code, EXIT_CODES in
 * errors.ts), the docs/errors.md section it is listed in, and a one-line meaning. docs/errors.md is generated from
 * this object (`pnpm gen:errors`); a test fails when it is stale. Keep the keys sorted: one line per code merges cleanly.
 */
import type { ErrorSpec } from './error-spec.js';

export const ERRORS = {
  ADMIN_HOST_REFUSED: {
    category: 'auth',
    area: 'admin',
    meaning: "the admin request's `Host` (or `Origin`) does not name this gateway (DNS-rebinding protection, as on `/mcp`); 403",
    status: 403,
  },
  ADMIN_REQUEST_FAILED: {
    category: 'network',
    area: 'admin',
    meaning: 'CLI: the admin API answered with an error or something that is not JSON',
  },
  ADMIN_REQUEST_INVALID: {
    category: 'usage',
    area: 'admin',
    meaning:
      "an admin request body that is not JSON, nests deeper than 32 levels, is larger than 1 MiB (413) or does not match the route's " +
      'schema (e.g. an empty revocation reason)',
  },
  ADMIN_REQUEST_REFUSED: {
    category: 'auth',
    area: 'admin',
    meaning: 'CLI: the admin API refused the token (401/403) without one of our codes',
  },
  ADMIN_ROUTE_NOT_FOUND: {
    category: 'usage',
    area: 'admin',
    meaning: 'an unknown `/admin/*` route',
    status: 404,
  },
  ADMIN_SESSIONS_UNAVAILABLE: {
    category: 'usage',
    area: 'admin',
    meaning: '`/admin/sessions*` on a gateway that runs without its authorization server',
    status: 404,
  },
  ADMIN_TOKEN_INVALID: {
    category: 'auth',
    area: 'admin',
    meaning: 'missing or wrong admin bearer token',
    status: 401,
  },
  ADMIN_TOKEN_MISSING: { category: 'auth', area: 'admin', meaning: 'CLI: no token in `GATEWAY_ADMIN_TOKEN` or the vault' },
  ADMIN_TOKEN_NOT_CONFIGURED: {
    category: 'auth',
    area: 'admin',
    meaning: 'no admin token in the vault: the admin API answers 401 to everything',
    status: 401,
  },
  ADMIN_TOKEN_THROTTLED: {
    category: 'auth',
    area: 'admin',
    meaning: 'too many wrong admin tokens from this client address (20 in 15 minutes); 429 with `Retry-After`',
    status: 429,
  },
  ADMIN_TOKEN_UNAVAILABLE: {
    category: 'internal',
    area: 'admin',
    meaning: 'the vault failed while reading the admin token',
    status: 503,
  },
  APPROVER_INVALID: {
    category: 'usage',
    area: 'lock',
    meaning: 'an `--approvers` entry is neither a person name nor `@operators`, or was given without `--each-call`',
  },
  ARGUMENT_REQUIRED_EMPTY: {
    category: 'usage',
    area: 'serving',
    meaning:
      'a required parameter or form-body property is an empty array or object, which its serialisation would send as ' +
      'nothing; refused before any request (docs/request-fidelity.md)',
  },
  AUTH_CA_CERTIFICATE_UNREADABLE: {
    category: 'config',
    area: 'authorization',
    meaning: 'a file in `auth.clientMetadata.caCertificates` cannot be read',
  },
  AUTH_SIGNING_KEYS_INVALID: {
    category: 'config',
    area: 'authorization',
    meaning: 'the vault entry `oauth-signing-keys` is not a key set',
  },
  BODY_ENCODING_FAILED: { category: 'usage', area: 'serving', meaning: 'a form-urlencoded body argument that is not an object' },
  BODY_MEDIA_TYPE_UNSUPPORTED: { category: 'refused', area: 'serving', meaning: 'a request body that is not JSON, form or text' },
  CALL_APPROVAL_DENIED: {
    category: 'refused',
    area: 'mcp',
    meaning: 'a person denied this very call of a tool reviewed `approval: each-call`; it did not run',
  },
  CALL_APPROVAL_EXPIRED: {
    category: 'refused',
    area: 'mcp',
    meaning:
      'receipt reason: a one-call approval expired before a person decided it or before its call used it (an approval receipt, ' +
      'docs/receipts.md)',
  },
  CALL_APPROVAL_UNAVAILABLE: {
    category: 'refused',
    area: 'mcp',
    meaning: 'the tool was reviewed `approval: each-call` and no approval of this very call could be asked for or found; it did not run',
  },
  CALL_CANCELLED: {
    category: 'network',
    area: 'receipts',
    meaning:
      '(receipt reason) the client cancelled the call before it ended (closed its request or sent `notifications/cancelled`); ' +
      'the cancellation was forwarded upstream',
  },
  CLIENT_METADATA_INVALID: {
    category: 'refused',
    area: 'authorization',
    meaning: 'a client metadata document is malformed, mismatched, not JSON, or not served with 200',
  },
  CLIENT_METADATA_UNAVAILABLE: {
    category: 'network',
    area: 'authorization',
    meaning: 'a client metadata document could not be fetched (network, SSRF guard, TLS, size, time)',
  },
  CONFIG_EXISTS: { category: 'refused', area: 'config', meaning: '`gateway init` would overwrite a file; pass `--force`' },
  CONFIG_INVALID: {
    category: 'config',
    area: 'config',
    meaning: 'does not match the schema; the message names the key and its line, `details.problems` lists all',
  },
  CONFIG_INVALID_YAML: { category: 'config', area: 'config', meaning: 'not valid YAML; the message gives the line' },
  CONFIG_NOT_FOUND: { category: 'config', area: 'config', meaning: 'no gateway.yaml at the path; run `gateway init` or pass `--config`' },
  CONFIG_UNREADABLE: { category: 'config', area: 'config', meaning: 'the file exists but cannot be read' },
  CREDENTIALS_UNAVAILABLE: {
    category: 'config',
    area: 'receipts',
    meaning: '(receipt reason) the credential for the call could not be resolved',
  },
  CREDENTIAL_INVALID: { category: 'config', area: 'credentials', meaning: 'e.g. a basic username containing `:`' },
  CREDENTIAL_NOT_AVAILABLE: {
    category: 'auth',
    area: 'credentials',
    meaning: 'no security alternative of the operation has configured credentials',
  },
  CREDENTIAL_SCHEME_MISMATCH: {
    category: 'config',
    area: 'credentials',
    meaning: 'the credential type cannot satisfy the security scheme',
  },
  CREDENTIAL_SECRET_MISSING: { category: 'config', area: 'credentials', meaning: "the login's secret is not in the vault" },
  CREDENTIAL_TOKEN_URL_MISSING: { category: 'config', area: 'credentials', meaning: 'OAuth client credentials without a token URL' },
  DATABASE_BUSY: {
    category: 'refused',
    area: 'serving',
    meaning:
      'another connection held the SQLite lock past the wait bound (5 s): 503 with `Retry-After` on every HTTP surface ' +
      '(an OAuth `temporarily_unavailable` body, a JSON-RPC error on `/mcp`, problem+json elsewhere)',
    status: 503,
  },
  DATABASE_MIGRATIONS_PENDING: {
    category: 'config',
    area: 'serving',
    meaning: 'the PostgreSQL database lacks schema migrations this gateway version applies (`gateway doctor`; docs/deployment.md)',
  },
  DATABASE_MIGRATIONS_UNKNOWN: {
    category: 'config',
    area: 'serving',
    meaning: 'the PostgreSQL database holds migrations this gateway version does not know: a newer version migrated it',
  },
  DATABASE_UNREACHABLE: {
    category: 'network',
    area: 'serving',
    meaning: 'the PostgreSQL database of `storage.url` refused or did not answer the connection (the message never shows the password)',
  },
  DATABASE_URL_INVALID: {
    category: 'config',
    area: 'serving',
    meaning: 'the vault secret `storage.url` names is not a `postgres://` connection string',
  },
  DATABASE_URL_MISSING: {
    category: 'config',
    area: 'serving',
    meaning: 'the vault has no secret of the name `storage.url` gives (the PostgreSQL connection string)',
  },
  DRIFT_CHECK_FAILED: { category: 'internal', area: 'serving', meaning: '(drift report) an unexpected failure during a check' },
  DRIFT_DISABLED: {
    category: 'refused',
    area: 'admin',
    meaning: '`POST /admin/drift/check` while `drift.enabled` is false',
    status: 409,
  },
  DRIFT_DOCUMENT_UNAVAILABLE: {
    category: 'network',
    area: 'serving',
    meaning: '(drift report) the description URL answered other than 2xx/304',
  },
  DRIFT_DOCUMENT_UNREADABLE: { category: 'document', area: 'serving', meaning: '(drift report) the description file cannot be read' },
  FETCH_FAILED: { category: 'network', area: 'serving', meaning: 'a URL could not be fetched' },
  FETCH_REDIRECT_REFUSED: { category: 'refused', area: 'serving', meaning: 'a URL, or a redirect, to a scheme other than http/https' },
  FETCH_RESPONSE_TOO_LARGE: { category: 'document', area: 'serving', meaning: 'a response body over its size limit' },
  FETCH_TIMEOUT: { category: 'network', area: 'serving', meaning: 'no complete answer in time' },
  FETCH_TOO_MANY_REDIRECTS: {
    category: 'network',
    area: 'serving',
    meaning: 'more redirects than allowed (a redirect loop, or a misconfigured server)',
  },
  GATEWAY_UNREACHABLE: { category: 'network', area: 'admin', meaning: 'CLI: cannot connect to the gateway' },
  GATEWAY_URL_INVALID: { category: 'usage', area: 'serving', meaning: '`--url` is not https (http only for loopback hosts)' },
  HEADER_VALUE_INVALID: { category: 'usage', area: 'serving', meaning: 'a header parameter value holds control or non-ASCII characters' },
  INTERNAL_ERROR: {
    category: 'internal',
    area: 'config',
    meaning: 'an unexpected failure; a bug',
    status: 500,
  },
  KEY_EXISTS: { category: 'refused', area: 'lock', meaning: '`gateway keys generate` would overwrite a key; pass `--force`' },
  KEY_INVALID: {
    category: 'usage',
    area: 'lock',
    meaning: 'the signing key is not an Ed25519 JWK, `alg` is not EdDSA, or `kid` is not its RFC 7638 thumbprint',
  },
  KEY_NOT_PRIVATE: { category: 'usage', area: 'lock', meaning: 'the signing key has no private part' },
  KEY_NOT_TRUSTED: { category: 'refused', area: 'lock', meaning: 'the signing key is not listed under `trust.keys`' },
  KEY_PRIVATE_PART_PRESENT: { category: 'config', area: 'lock', meaning: 'a `trust.keys` file holds a private key' },
  KEY_REQUIRED: {
    category: 'usage',
    area: 'lock',
    meaning: '`gateway publish` got no key (`--key`, `GATEWAY_PUBLISH_KEY`, `GATEWAY_PUBLISH_KEY_FILE`)',
  },
  KEY_UNREADABLE: {
    category: 'usage',
    area: 'lock',
    meaning: 'the signing key file (`--key`, `GATEWAY_PUBLISH_KEY_FILE`) is missing or unreadable',
  },
  LISTEN_ADDRESS_INVALID: { category: 'usage', area: 'serving', meaning: '`--listen` / `gateway.listen` is not `host:port`' },
  LISTEN_ADDRESS_UNAVAILABLE: {
    category: 'config',
    area: 'config',
    meaning: 'the listen address is in use (another gateway?), needs privileges, or is not an address of this machine',
  },
  LISTEN_INSECURE_REFUSED: {
    category: 'config',
    area: 'serving',
    meaning: 'plain HTTP on a non-loopback address; configure `gateway.tls`',
  },
  LOCK_FINGERPRINT_MISMATCH: {
    category: 'verification',
    area: 'verification',
    meaning: "an operation's request shape does not match its fingerprint (names the tool)",
  },
  LOCK_KEY_UNTRUSTED: { category: 'verification', area: 'verification', meaning: 'the signer is not in `trust.keys`' },
  LOCK_NESTING_TOO_DEEP: {
    category: 'document',
    area: 'lock',
    meaning:
      'the lock about to be written would nest deeper than the reader accepts (256 levels); nothing is written (the importer already ' +
      'marks such operations `TOOL_SCHEMA_TOO_COMPLEX`, so this is a last line)',
  },
  LOCK_NOT_FOUND: { category: 'lock', area: 'lock', meaning: 'no tools.lock; run `gateway import <source>` first' },
  LOCK_OPERATION_NOT_SELECTED: {
    category: 'verification',
    area: 'verification',
    meaning: 'an in-use publication holds an unselected operation',
  },
  LOCK_OPERATION_UNSUPPORTED: {
    category: 'verification',
    area: 'verification',
    meaning: 'an in-use publication holds an unsupported operation',
  },
  LOCK_PUBLICATION_CONFLICT: {
    category: 'verification',
    area: 'verification',
    meaning: 'more than one in-use or proposed publication for a source',
  },
  LOCK_PUBLICATION_ID_INVALID: {
    category: 'verification',
    area: 'verification',
    meaning: 'a publication number is reused or above `lastPublication`',
  },
  LOCK_RELOAD_FAILED: {
    category: 'verification',
    area: 'verification',
    meaning: '(server log) a new lock could not be loaded; the last good one keeps serving',
  },
  LOCK_SCHEMA_INVALID: { category: 'lock', area: 'lock', meaning: 'the lock does not match its schema' },
  LOCK_SIGNATURE_INVALID: {
    category: 'verification',
    area: 'verification',
    meaning: 'the signature is malformed, its `kid` differs from `keyId`, or the signed content changed (names the operation)',
  },
  LOCK_SIGNATURE_MISSING: { category: 'verification', area: 'verification', meaning: 'an in-use publication is not signed' },
  LOCK_SOURCE_DUPLICATE: { category: 'verification', area: 'verification', meaning: 'a source appears twice in the lock' },
  LOCK_SOURCE_MISMATCH: {
    category: 'verification',
    area: 'verification',
    meaning: "the lock's document location or kind differs from gateway.yaml",
  },
  LOCK_SOURCE_MISSING: { category: 'verification', area: 'verification', meaning: 'a source of gateway.yaml is not in the lock' },
  LOCK_SOURCE_ORPHAN: { category: 'verification', area: 'verification', meaning: 'a source in the lock is not in gateway.yaml' },
  LOCK_TOOL_COUNT_MISMATCH: {
    category: 'verification',
    area: 'verification',
    meaning: '`toolCount` differs from the number of selected operations',
  },
  LOCK_TOOL_NAME_DUPLICATE: {
    category: 'verification',
    area: 'verification',
    meaning: 'a tool name appears twice, within a publication or across sources',
  },
  LOCK_UNREADABLE: { category: 'lock', area: 'lock', meaning: 'the lock cannot be read or is not valid YAML (aliases are refused)' },
  LOCK_VERIFICATION_FAILED: {
    category: 'verification',
    area: 'verification',
    meaning: 'the lock did not verify; `details.problems` holds the findings below (the server refuses to start or reload)',
  },
  LOGIN_NOT_IN_SESSION: {
    category: 'auth',
    area: 'credentials',
    meaning: 'the login exists but the person did not allow this session to use it',
  },
  MCP_CALL_CANCELLED: {
    category: 'network',
    area: 'mcp',
    meaning: 'the client cancelled the call; the cancellation was forwarded upstream',
  },
  MCP_CA_CERTIFICATE_UNREADABLE: {
    category: 'config',
    area: 'mcp',
    meaning: "a file named in an MCP source's `caCertificates` cannot be read or holds no PEM certificate",
  },
  MCP_LISTER_MISSING: {
    category: 'usage',
    area: 'mcp',
    meaning: 'an MCP source was imported by code that cannot connect to MCP servers (a bug in the caller)',
  },
  MCP_LIST_TOO_LONG: { category: 'document', area: 'mcp', meaning: '`tools/list` kept giving a `nextCursor` for more than 100 pages' },
  MCP_RESPONSE_TOO_LARGE: {
    category: 'refused',
    area: 'mcp',
    meaning: "the upstream's result is larger than the source's `maxResponseBytes`",
  },
  MCP_RESULT_CARRIES_CREDENTIAL: {
    category: 'refused',
    area: 'mcp',
    meaning: "the upstream's result carries a credential of the source in binary content (bytes cannot be redacted): refused",
  },
  MCP_SECRET_MISSING: {
    category: 'config',
    area: 'mcp',
    meaning: 'a secret the source names (`env.*.secret`, `credentials.secret`) is not in the vault',
  },
  MCP_SOURCE_UNKNOWN: { category: 'internal', area: 'mcp', meaning: 'a call was routed to a source that is not an MCP source (a bug)' },
  MCP_UPSTREAM_CLOSED: { category: 'network', area: 'mcp', meaning: 'the gateway is shutting down' },
  MCP_UPSTREAM_CRASHED: {
    category: 'network',
    area: 'mcp',
    meaning: "the upstream's process exited or its connection dropped during the call; it is being restarted with backoff",
  },
  MCP_UPSTREAM_FAILED: {
    category: 'network',
    area: 'mcp',
    meaning: 'the upstream answered the call with a protocol error (the message carries its words)',
  },
  MCP_UPSTREAM_TIMEOUT: {
    category: 'network',
    area: 'mcp',
    meaning: "the upstream did not answer within the source's `timeouts.totalMs` (the call is cancelled upstream)",
  },
  MCP_UPSTREAM_UNAVAILABLE: {
    category: 'network',
    area: 'mcp',
    meaning: 'the MCP server could not be started or reached, or its handshake failed (Streamable HTTP and HTTP+SSE were both tried)',
  },
  NETWORK_ADDRESS_INVALID: { category: 'internal', area: 'serving', meaning: 'a text that should be an IP address is not one' },
  NETWORK_ALLOWLIST_INVALID: {
    category: 'config',
    area: 'serving',
    meaning: 'an entry of `network.allowPrivateNetworks` or `gateway.trustedProxies` is not an address or CIDR range',
  },
  OAUTH_TOKEN_ENDPOINT_UNREACHABLE: {
    category: 'network',
    area: 'credentials',
    meaning: 'the upstream token endpoint could not be reached or did not answer in time',
  },
  OAUTH_TOKEN_REQUEST_FAILED: {
    category: 'auth',
    area: 'credentials',
    meaning: 'the upstream token endpoint refused the client credentials, or issued a token that is not a bearer token',
  },
  OIDC_SIGN_IN_FAILED: { category: 'auth', area: 'authorization', meaning: "sign-in through the company's OIDC provider failed" },
  OIDC_SIGN_IN_REFUSED: {
    category: 'auth',
    area: 'authorization',
    meaning: "the account's email domain is not in `auth.oidc.allowedDomains`",
  },
  OPENAPI_ALIAS_LIMIT: { category: 'document', area: 'import', meaning: 'YAML aliases expand beyond 100 nodes (an alias bomb)' },
  OPENAPI_FETCHER_MISSING: {
    category: 'internal',
    area: 'import',
    meaning:
      "a URL reached core's importer without a guarded fetcher injected (a bug: the CLI and the server always inject one); " +
      'nothing is fetched',
  },
  OPENAPI_FILE_REF_REFUSED: {
    category: 'document',
    area: 'import',
    meaning: "a file `$ref` outside the document's folder, or in a document read from a URL",
  },
  OPENAPI_INVALID: {
    category: 'document',
    area: 'import',
    meaning: 'fails the official schema of its version; the first problems with their JSON pointers',
  },
  OPENAPI_NAME_INVALID: {
    category: 'document',
    area: 'import',
    meaning: 'a name (path, `operationId`, parameter or property name, any object key) contains U+0000; the JSON pointer is given',
  },
  OPENAPI_NOT_FOUND: { category: 'document', area: 'import', meaning: 'the document file does not exist or is not a file' },
  OPENAPI_NOT_UTF8: {
    category: 'document',
    area: 'import',
    meaning: 'the document or a referenced file is not valid UTF-8 (never replaced by U+FFFD)',
  },
  OPENAPI_PARSE_ERROR: { category: 'document', area: 'import', meaning: 'neither valid JSON nor YAML; line and column given' },
  OPENAPI_REFERENCE_UNRESOLVABLE: {
    category: 'document',
    area: 'import',
    meaning: "referenced files cannot be joined, or a path item's `$ref` cannot be followed",
  },
  OPENAPI_REMOTE_REF_REFUSED: { category: 'document', area: 'import', meaning: 'a remote `$ref` is needed but `allowRemoteRefs` is off' },
  OPENAPI_TOO_DEEP: {
    category: 'document',
    area: 'import',
    meaning:
      'objects and arrays nest deeper than 128 levels (`MAX_DOCUMENT_DEPTH`), or schemas nest through `$ref` deeper than 500 ' +
      '(`MAX_SCHEMA_NESTING`)',
  },
  OPENAPI_TOO_LARGE: {
    category: 'document',
    area: 'import',
    meaning: 'over `import.maxDocumentBytes` (default 25 MiB, referenced files included)',
  },
  OPENAPI_UNREACHABLE: { category: 'network', area: 'import', meaning: 'the URL could not be fetched (refused, DNS, timeout, non-2xx)' },
  OPENAPI_UNREADABLE: { category: 'document', area: 'import', meaning: 'the file exists but cannot be read' },
  OPENAPI_UNSUPPORTED_VERSION: {
    category: 'document',
    area: 'import',
    meaning: 'Swagger 2.0, no `openapi` field, or not 3.0.x / 3.1.x / 3.2.x; the version is named',
  },
  PARAMETER_STYLE_UNSUPPORTED: { category: 'refused', area: 'serving', meaning: 'a parameter style the executor cannot serialise' },
  PATH_PARAMETER_INVALID: {
    category: 'usage',
    area: 'serving',
    meaning:
      'a path argument is `.`, `..` or empty (after serialisation), or the request path would no longer match the frozen path ' +
      'template; nothing is sent',
  },
  PATH_PARAMETER_MISSING: { category: 'usage', area: 'serving', meaning: 'a path template variable has no value' },
  PEOPLE_FILE_INVALID: { category: 'config', area: 'authorization', meaning: 'the people file is not valid' },
  PERSON_ACTION_REQUIRED: {
    category: 'refused',
    area: 'receipts',
    meaning:
      '(receipt reason, outcome `action-required`) a person must act before the call runs: 2026-07-28 answers `input_required` with a ' +
      'URL elicitation and a `requestState`, 2025-11-25 the error -32042; the client retries',
  },
  PERSON_EXISTS: { category: 'refused', area: 'authorization', meaning: 'the person already exists (use `--replace`)' },
  PERSON_LOGIN_FAILED: {
    category: 'network',
    area: 'credentials',
    meaning:
      'a per-person login (`oauthPerson`) could not talk to its provider: discovery, the code exchange or a refresh failed ' +
      '(not a revoked grant)',
  },
  PERSON_LOGIN_NOT_FOUND: {
    category: 'usage',
    area: 'credentials',
    meaning: '`gateway logins unlink`: that person has no link for that login',
  },
  PERSON_LOGIN_NOT_LINKED: {
    category: 'auth',
    area: 'credentials',
    meaning:
      "the session's person has not linked their account for a per-person login (`oauthPerson`), or the provider revoked the " +
      'grant (`invalid_grant` removes the link); the next call asks the person to link it',
  },
  PERSON_LOGIN_VAULT_READ_ONLY: {
    category: 'config',
    area: 'config',
    meaning: 'a per-person login (`oauthPerson`) with the read-only `env` or `exec` vault: tokens need the writable `file` vault',
  },
  PERSON_NAME_INVALID: { category: 'usage', area: 'authorization', meaning: 'an invalid name for `gateway people add`' },
  PERSON_NOT_FOUND: { category: 'usage', area: 'authorization', meaning: 'no such person' },
  PERSON_PASSWORD_WEAK: { category: 'usage', area: 'authorization', meaning: 'a password shorter than 12 characters' },
  PERSON_ROLE_INVALID: {
    category: 'usage',
    area: 'authorization',
    meaning: 'a role given to `gateway people` is not one the gateway knows (`operator`)',
  },
  PROPOSAL_NOT_FOUND: { category: 'lock', area: 'lock', meaning: 'the source has no proposed publication; import first' },
  PUBLISH_NOTHING_SELECTED: { category: 'refused', area: 'lock', meaning: 'the proposal selects no operation' },
  PUBLISH_SIGNATURE_FAILED: { category: 'internal', area: 'lock', meaning: 'the new signature did not verify' },
  PUBLISH_STALE: {
    category: 'refused',
    area: 'lock',
    meaning: 'the proposal no longer matches the live document (`--allow-stale` overrides, recorded)',
  },
  PUBLISH_TOOL_NAME_CONFLICT: {
    category: 'refused',
    area: 'lock',
    meaning: "another source's in-use publication already offers that tool name",
  },
  PUBLISH_UNSUPPORTED_SELECTED: { category: 'refused', area: 'lock', meaning: 'the proposal selects an unsupported operation' },
  RECEIPTS_ANCHOR_MISMATCH: {
    category: 'verification',
    area: 'receipts',
    meaning:
      'the receipt log in the database is not consistent with its last signed checkpoint kept outside it ' +
      "(`receipts-anchor.json`, the vault): `serve` stops, and no checkpoint is signed; the message names the checkpoint's size",
  },
  RECEIPTS_CHECKPOINTS_INVALID: {
    category: 'usage',
    area: 'receipts',
    meaning:
      '`receipts verify --checkpoints`: the file is unreadable, or a line is not JSON or not a checkpoint event of the ' +
      'documented shape (its line number is named)',
  },
  RECEIPTS_EXPORT_INVALID: {
    category: 'usage',
    area: 'receipts',
    meaning: '`receipts verify --file`: the file is unreadable or a line is not a key, receipt or checkpoint',
  },
  RECEIPTS_KEY_INVALID: {
    category: 'config',
    area: 'receipts',
    meaning: '`receipts-digest-key` or `receipts-signing-key` in the vault, or a key of `receipts.trustedKeys`, is malformed',
  },
  RECEIPTS_SIGNING_KEY_NOT_SHARED: {
    category: 'config',
    area: 'receipts',
    meaning:
      '`--workers N` with a read-only vault that has no `receipts-signing-key`: each worker would sign checkpoints with a key ' +
      'of its own, which neither `receipts verify` nor the other workers trust; use the file vault or provide the entry',
  },
  RECEIPTS_TRUSTED_KEY_MISSING: {
    category: 'usage',
    area: 'receipts',
    meaning:
      '`receipts verify --file`/`--checkpoints` found no checkpoint key to trust: pass `--key`, or run it where gateway.yaml ' +
      'and its vault are',
  },
  RECEIPT_FILTER_INVALID: {
    category: 'usage',
    area: 'receipts',
    meaning: 'a `receipts list` filter is malformed',
    status: 400,
  },
  RECEIPT_JOURNAL_IN_USE: {
    category: 'config',
    area: 'receipts',
    meaning: 'another running gateway process serves from the same data directory (each needs its own, or use `--workers`)',
  },
  RECEIPT_JOURNAL_LINE_QUARANTINED: {
    category: 'verification',
    area: 'receipts',
    meaning:
      '(server log) a receipt journal held lines without a valid MAC, or a copy of an entry already read: not moved in, kept in ' +
      '`receipts-journal-<slot>.quarantine.jsonl`',
  },
  RECEIPT_NOT_FOUND: {
    category: 'usage',
    area: 'receipts',
    meaning: 'no such receipt (or no checkpoint covers it yet)',
    status: 404,
  },
  RECEIPT_WRITE_FAILED: {
    category: 'internal',
    area: 'receipts',
    meaning:
      "(server log) a call's receipt could not be written: with the journal the call was answered; without one " +
      '(PostgreSQL, `receipts.journal: false`) it was answered with an internal error instead of its result',
  },
  REQUEST_INVALID: {
    category: 'usage',
    area: 'serving',
    meaning:
      "an HTTP request outside `/mcp`, OAuth and `/admin` whose parameters, query, headers or body do not match the route's schema; " +
      'problem+json naming what does not match',
    status: 400,
  },
  REQUEST_PATH_INVALID: {
    category: 'usage',
    area: 'serving',
    meaning:
      'a request path with a segment longer than 100 characters (414) or malformed percent-encoding (400); problem+json that does ' +
      'not repeat the path',
    status: 400,
  },
  REQUEST_STATE_EXPIRED: {
    category: 'refused',
    area: 'receipts',
    meaning: "a retry's `requestState` is past its expiry (-32602); call the tool again without it",
  },
  REQUEST_STATE_INVALID: {
    category: 'refused',
    area: 'receipts',
    meaning:
      "a retry's `requestState` was changed, was not issued by this gateway, or was issued for another session, person, tool or " +
      'arguments (-32602)',
  },
  REQUEST_STATE_KEY_NOT_SHARED: {
    category: 'config',
    area: 'serving',
    meaning:
      "`--workers N`, or a replica on PostgreSQL, with a read-only vault that has no `request-state-key`: a retry's " +
      '`requestState` issued by one process would be refused by the others; use a writable vault they share or provide the entry',
  },
  REQUEST_STATE_USED: {
    category: 'refused',
    area: 'receipts',
    meaning: "a retry's `requestState` was already spent: each is good for one retry (-32602)",
  },
  REVIEW_CANCELLED: { category: 'usage', area: 'lock', meaning: 'the interactive checklist was cancelled; the lock is unchanged' },
  SECRET_VALUE_EMPTY: { category: 'usage', area: 'credentials', meaning: '`gateway secrets set` read an empty value from stdin' },
  SELECTION_NO_MATCH: { category: 'usage', area: 'lock', meaning: 'a `--select`/`--deselect` pattern matches no tool of the source' },
  SELECTION_UNSUPPORTED: {
    category: 'refused',
    area: 'lock',
    meaning: 'an unsupported operation was selected; the message gives its reason code and sentence',
  },
  SERVER_OVERRIDE_INVALID: {
    category: 'config',
    area: 'import',
    meaning: '`sources.<name>.server` is not an absolute http(s) URL, or names a server variable the document does not declare',
  },
  SESSION_ALREADY_ENDED: {
    category: 'refused',
    area: 'authorization',
    meaning: '`gateway sessions revoke`: the session had already been revoked or had expired; nothing changed',
    status: 409,
  },
  SESSION_EXPIRED: {
    category: 'auth',
    area: 'receipts',
    meaning: "the session's time limit had passed: a call on it is refused (401 on /mcp, or an `isError` result) and receipted as denied",
  },
  SESSION_NOT_FOUND: {
    category: 'usage',
    area: 'authorization',
    meaning: 'no such session',
    status: 404,
  },
  SESSION_REVOKED: {
    category: 'auth',
    area: 'receipts',
    meaning: 'the session was revoked: a call on it is refused (401 on /mcp, or an `isError` result) and receipted as denied',
  },
  SOURCE_UNKNOWN: {
    category: 'usage',
    area: 'config',
    meaning: 'no source of that name in gateway.yaml (the message lists the known ones)',
  },
  SSRF_ADDRESS_REFUSED: {
    category: 'refused',
    area: 'serving',
    meaning: 'a connection to a loopback, private, link-local, CGNAT or metadata address outside `network.allowPrivateNetworks`',
  },
  TLS_FILES_UNREADABLE: { category: 'config', area: 'serving', meaning: 'the `gateway.tls` certificate or key cannot be read' },
  TOOL_ARGUMENTS_INVALID: {
    category: 'usage',
    area: 'receipts',
    meaning: "(receipt reason) the arguments do not match the tool's input schema",
  },
  TOOL_BLOCKED_BY_DRIFT: { category: 'refused', area: 'receipts', meaning: 'drift blocks the tool (an `isError` result naming the drift)' },
  TOOL_CHANGED_SINCE_APPROVAL: {
    category: 'refused',
    area: 'receipts',
    meaning:
      "the tool's fingerprint differs from the one approved: outcome `action-required`, answered with the step-up challenge (403 " +
      'insufficient_scope) or, without one, -32602',
  },
  TOOL_NOT_IN_SESSION: { category: 'refused', area: 'receipts', meaning: 'the person did not approve the tool for this session (-32602)' },
  TOOL_UNKNOWN: { category: 'refused', area: 'receipts', meaning: 'no in-use publication offers the tool (JSON-RPC -32602 on `/mcp`)' },
  TRUST_KEY_INVALID: {
    category: 'config',
    area: 'lock',
    meaning: 'a `trust.keys` file is not an Ed25519 public JWK, `alg` is not EdDSA, or `kid` is not its RFC 7638 thumbprint',
  },
  TRUST_KEY_UNREADABLE: { category: 'config', area: 'lock', meaning: 'a `trust.keys` file is missing or unreadable' },
  UPSTREAM_ERROR_STATUS: { category: 'network', area: 'receipts', meaning: '(receipt reason) the upstream answered non-2xx' },
  UPSTREAM_REDIRECT_REFUSED: { category: 'network', area: 'receipts', meaning: '(receipt reason) a redirect the executor does not follow' },
  UPSTREAM_REQUEST_REFUSED: {
    category: 'refused',
    area: 'receipts',
    meaning: '(receipt reason) the request could not be built from the arguments',
  },
  UPSTREAM_RESPONSE_CARRIES_CREDENTIAL: {
    category: 'refused',
    area: 'receipts',
    meaning: "(receipt reason) the upstream's answer carried a credential of the call in binary content and was refused",
  },
  UPSTREAM_RESPONSE_TOO_LARGE: {
    category: 'network',
    area: 'receipts',
    meaning: "(receipt reason) the upstream's answer exceeded the limit",
  },
  UPSTREAM_SERVER_MISSING: { category: 'refused', area: 'serving', meaning: 'the operation has no server URL in the lock' },
  UPSTREAM_TIMEOUT: { category: 'network', area: 'receipts', meaning: '(receipt reason) the upstream did not answer in time' },
  UPSTREAM_UNREACHABLE: { category: 'network', area: 'receipts', meaning: '(receipt reason) the upstream could not be reached' },
  USAGE_INVALID: {
    category: 'usage',
    area: 'config',
    meaning: 'a flag or argument value is not acceptable (e.g. `--format`, an empty password on stdin)',
  },
  VAULT_BUSY: { category: 'refused', area: 'credentials', meaning: "the vault's write lock was held for more than 5 s" },
  VAULT_DATABASE_SHARED: {
    category: 'config',
    area: 'credentials',
    meaning: "`storage.url` and `vault.postgres.url` name one database: the vault's values must not be in the gateway's database",
  },
  VAULT_DATABASE_UNREACHABLE: {
    category: 'network',
    area: 'credentials',
    meaning:
      "the `postgres` vault's database refused or did not answer (or refused a statement: the role lacks a privilege); " +
      'the message names `host:port/database` only',
  },
  VAULT_DATABASE_URL_INVALID: {
    category: 'config',
    area: 'credentials',
    meaning: '`vault.postgres.url` gave something that is not a `postgres://` connection string (the value is never shown)',
  },
  VAULT_DATABASE_URL_MISSING: {
    category: 'config',
    area: 'credentials',
    meaning: "`vault.postgres.url`'s environment variable is unset, its file is missing or its command printed nothing",
  },
  VAULT_EXEC_FAILED: {
    category: 'config',
    area: 'credentials',
    meaning:
      'the exec helper (the `exec` provider, or a `vault.postgres` `exec` setting) failed, timed out or could not start ' +
      '(its output is never shown)',
  },
  VAULT_FILE_INVALID: { category: 'config', area: 'credentials', meaning: 'the vault file is unreadable or of an unknown version' },
  VAULT_KEY_INVALID: {
    category: 'config',
    area: 'credentials',
    meaning: 'the vault key is malformed, or does not open the vault (`postgres`: the secret named was sealed under another key)',
  },
  VAULT_KEY_MISSING: {
    category: 'config',
    area: 'credentials',
    meaning: 'the vault holds secrets (or `keyEnv` is set) but no key was found; `postgres`: `vault.postgres.key` gave nothing',
  },
  VAULT_KEY_PERMISSIONS: {
    category: 'config',
    area: 'credentials',
    meaning: 'the key file is readable or writable by group or others (must be 0600)',
  },
  VAULT_LIST_UNSUPPORTED: { category: 'refused', area: 'credentials', meaning: '`list` on the `exec` provider' },
  VAULT_READ_ONLY: { category: 'refused', area: 'credentials', meaning: '`set`/`delete` on the `env` or `exec` provider' },
  VAULT_SECRET_ALTERED: {
    category: 'config',
    area: 'credentials',
    meaning: "a `postgres` vault row does not open under its own key: it was altered, or moved from another secret's name",
  },
  VAULT_SECRET_EMPTY: { category: 'usage', area: 'credentials', meaning: 'refusing to store an empty value' },
  VAULT_SECRET_NAME_INVALID: { category: 'usage', area: 'credentials', meaning: 'a secret name outside `[A-Za-z0-9._-]`' },
  VAULT_SECRET_NOT_FOUND: { category: 'usage', area: 'credentials', meaning: '`rotate`/`delete` of an unknown secret' },
  WEBHOOKS_REQUIRE_RECEIPTS: { category: 'config', area: 'webhooks', meaning: 'a `webhooks` section with `receipts.enabled: false`' },
  WEBHOOK_ENDPOINT_UNKNOWN: {
    category: 'usage',
    area: 'webhooks',
    meaning: 'no endpoint of that name in `gateway.yaml`',
    status: 404,
  },
  WEBHOOK_REQUEST_INVALID: {
    category: 'usage',
    area: 'webhooks',
    meaning: '`webhooks replay` without exactly one of `--failed` / `--from`, a bad sequence, status or limit',
    status: 400,
  },
  WEBHOOK_SECRET_INVALID: {
    category: 'config',
    area: 'webhooks',
    meaning: 'start-up: that vault secret is not a Standard Webhooks secret (`whsec_` + base64)',
  },
  WEBHOOK_SECRET_MISSING: {
    category: 'config',
    area: 'webhooks',
    meaning: 'start-up: the vault has no secret under a `webhooks.<name>.secret` / `previousSecret` name',
  },
  WEBHOOK_TEST_FAILED: { category: 'network', area: 'webhooks', meaning: '`webhooks test`: the receiver did not answer 2xx' },
  WORKERS_INVALID: { category: 'usage', area: 'serving', meaning: '`gateway serve --workers` is not a whole number from 1 to 64' },
  WORKERS_SIGNING_KEYS_NOT_SHARED: {
    category: 'config',
    area: 'serving',
    meaning:
      '`--workers N`, or a replica on PostgreSQL, with a read-only vault that has no `oauth-signing-keys`: the processes could ' +
      "not verify each other's tokens; use a writable vault they share or provide the entry",
  },
  WORKER_START_FAILED: {
    category: 'internal',
    area: 'serving',
    meaning: 'a worker of `gateway serve --workers N` exited before it was listening (its own error is logged above)',
  },
} as const satisfies Record<string, ErrorSpec>;

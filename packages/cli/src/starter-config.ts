/**
 * The commented gateway.yaml that `gateway init` writes. Every key is explained in docs/config.md; the test
 * suite loads this text with `parseConfig`, so the starter is always a valid configuration.
 */
export const STARTER_CONFIG = `# gateway.yaml: configuration of the governed tool gateway.
# Every key is documented in docs/config.md; the JSON Schema is docs/gateway-config.schema.json.
# Relative paths in this file are resolved against the directory of this file.

gateway:
  # The canonical base URL clients reach the gateway at. MCP is served at <url>/mcp, and access tokens
  # are issued for exactly that address. https is required except for loopback hosts.
  url: https://gateway.example.com
  # Where \`gateway serve\` listens (host:port). Plain HTTP is refused on anything but loopback.
  # listen: 127.0.0.1:8080

# The APIs whose operations may become tools. The key is the source name used by
# \`gateway import <source>\` and \`gateway review <source>\` (lower case, digits, - and _).
sources:
  orders:
    kind: openapi
    # An OpenAPI 3.0, 3.1 or 3.2 document (JSON or YAML): a path relative to this file, or an https URL.
    document: ./orders.openapi.yaml
    # $refs to other URLs are refused unless allowed here (refs inside the document, or to files
    # beside a local document, always work).
    # allowRemoteRefs: false
    # How the gateway authenticates to the API, per security scheme of the document. Secrets are
    # names in the vault (\`gateway secrets set <name>\`), never values.
    # credentials:
    #   apiKeyAuth: { type: apiKey, secret: orders-api-key }

# Public keys (JWK files) whose signatures on tools.lock publications this gateway trusts.
# Create a pair with \`gateway keys generate --out ./keys\`.
trust:
  keys: [./keys/publisher.pub.jwk]

# Limits for reading OpenAPI documents.
# import:
#   maxDocumentBytes: 26214400   # 25 MiB
#   timeoutMs: 15000
`;

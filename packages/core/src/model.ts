/**
 * The domain model shared by every package: normalised operations, publications and the lockfile.
 * Field names here are the field names in tools.lock (docs/lockfile.md documents them).
 */

/** A JSON Schema (2020-12) document or subschema, kept as plain JSON. */
export type JsonSchema = { [key: string]: unknown } | boolean;

/** Upper-case HTTP method, including OpenAPI 3.2 `QUERY` and any `additionalOperations` method. */
export type HttpMethod = string;

export type ParameterLocation = 'path' | 'query' | 'header' | 'cookie' | 'querystring';

/** `sources.<name>.server` in gateway.yaml: an absolute http(s) URL, or `{ variables: { name: value } }`. */
export type ServerOverride = string | { variables: Record<string, string> };

/** How one OpenAPI parameter maps from a tool argument into the HTTP request. */
export interface OperationParameter {
  /** The parameter's name on the wire. */
  name: string;
  in: ParameterLocation;
  /** The property name of this parameter in the tool's inputSchema. */
  argument: string;
  required: boolean;
  /** Serialisation style (`simple`, `form`, `label`, `matrix`, `spaceDelimited`, `pipeDelimited`, `deepObject`). */
  style: string;
  explode: boolean;
  allowReserved: boolean;
  /** Set when the parameter is described with `content` instead of `schema`: the media type to serialise to. */
  contentType?: string;
}

/** How one property of a form-urlencoded body is serialised (the media type's `encoding` entry, OAS 3.x). */
export interface BodyEncoding {
  /** `form`, `spaceDelimited`, `pipeDelimited` or `deepObject`. */
  style: string;
  explode: boolean;
  allowReserved: boolean;
  /** Set when the entry names a `contentType` and no `style`/`explode`: the property goes as that media type. */
  contentType?: string;
}

/** How the tool's body argument maps into the request body. */
export interface OperationBody {
  /** The property name of the body in the tool's inputSchema (always `body`, see docs/lockfile.md). */
  argument: string;
  /** The media type key of the document's request body. */
  mediaType: string;
  required: boolean;
  /** Set when `mediaType` is a wildcard (`*\/*`, `application/*`) with a JSON schema: the type actually sent. */
  sendAs?: string;
  /** form-urlencoded only, when the document declares `encoding`: each property's serialisation, by name. */
  encoding?: Record<string, BodyEncoding>;
}

/** A security scheme as the request needs it (copied from components.securitySchemes, secrets never). */
export interface SecuritySchemeSummary {
  type: string; // apiKey | http | oauth2 | openIdConnect | mutualTLS
  /** apiKey: where and under which name the key goes. */
  in?: 'header' | 'query' | 'cookie';
  name?: string;
  /** http: `basic`, `bearer`, … */
  scheme?: string;
  bearerFormat?: string;
  /** oauth2: the client-credentials token URL and scopes, when that flow exists. */
  tokenUrl?: string;
  flows?: string[];
  openIdConnectUrl?: string;
}

/** One alternative of an operation's security: every named scheme must be satisfied (with these scopes). */
export type SecurityRequirement = Record<string, string[]>;

export type SupportStatus = 'supported' | 'unsupported';

export interface UnsupportedReason {
  /** A stable code from docs/lockfile.md, e.g. `MEDIA_TYPE_UNSUPPORTED`. */
  code: string;
  /** One sentence a person can act on. */
  message: string;
}

/** The part of an operation that determines the HTTP request: the fingerprint covers exactly this. */
export interface RequestShape {
  method: HttpMethod;
  /** The path template exactly as in the document, e.g. `/orders/{orderId}`. */
  path: string;
  /** Absolute server URL with variables resolved, or null when the document gives none usable. */
  server: string | null;
  parameters: OperationParameter[];
  body: OperationBody | null;
  /** Alternatives (OR) of requirements (AND). `[]` means no security. */
  security: SecurityRequirement[];
  /** The schemes referenced by `security`, by name. */
  securitySchemes: Record<string, SecuritySchemeSummary>;
  inputSchema: JsonSchema;
}

export interface Operation extends RequestShape {
  /** The tool name: `^[a-z0-9_]{1,64}$`, unique within a source (docs/lockfile.md gives the rule). */
  tool: string;
  operationId: string | null;
  title: string | null;
  description: string;
  status: SupportStatus;
  reason: UnsupportedReason | null;
  /** `sha256:<hex>` over the RFC 8785 canonical JSON of the RequestShape. */
  fingerprint: string;
}

/**
 * What a person decides at review besides selecting (docs/approvals.md): whether each call of the tool waits
 * for a person's approval of that exact call, and who may give it. Absent on tools without (the lock writes
 * neither field then, so locks from before stay byte for byte the same). Signed with the publication.
 */
export interface ReviewChoices {
  /** `each-call`: the tool does not run until a person approves that exact call. */
  approval?: ApprovalMode;
  /**
   * Who may approve a call of an `each-call` tool: person names and `@operators` (anyone with the operator role).
   * Absent: the session's own person.
   */
  approvers?: string[];
}

export type ApprovalMode = 'each-call';

/** `approvers` entry naming everyone with the operator role (person names start with a letter or digit). */
export const OPERATORS_APPROVER = '@operators';

/** An operation inside a publication of the lock. */
export interface LockedOperation extends Operation, ReviewChoices {
  selected: boolean;
}

/**
 * One tool of an MCP source, normalised (core/mcp/normalise.ts). The fingerprint covers everything the model
 * sees of the tool: upstream name, title, description, inputSchema, outputSchema and annotations.
 */
export interface McpTool {
  /** The tool name clients of the gateway see: the upstream name, or `<source>__<name>` (docs/sources-mcp.md). */
  tool: string;
  /** The tool's name on the upstream MCP server (what `tools/call` is sent with). */
  name: string;
  title: string | null;
  description: string;
  status: SupportStatus;
  reason: UnsupportedReason | null;
  inputSchema: JsonSchema;
  outputSchema: JsonSchema | null;
  /** Upstream annotations (hints), shown at review and consent, never trusted for enforcement. */
  annotations: Record<string, unknown> | null;
  /** `sha256:<hex>` over the RFC 8785 canonical JSON of { name, title, description, inputSchema, outputSchema, annotations }. */
  fingerprint: string;
}

export interface LockedMcpTool extends McpTool, ReviewChoices {
  selected: boolean;
}

/** What every entry of a publication has, whatever the source kind: selection works on this alone. */
export type LockedEntry = LockedOperation | LockedMcpTool;

export type PublicationStatus = 'proposed' | 'in use';

/** Why an operation of the description is not a tool of an in-use publication. */
export type NotOfferedStatus = 'unsupported' | 'not selected';

/**
 * An operation (or MCP tool) of the description an in-use publication was made from that is not one of its tools:
 * kept, signed with the publication, so the lock keeps saying what was left out and why. Compact on purpose: no
 * request shape, only what identifies the operation and the fingerprint it had when it was left out.
 */
export interface NotOfferedEntry {
  tool: string;
  /** `METHOD /path` for an OpenAPI operation; the upstream tool name for an MCP tool. */
  operation: string;
  status: NotOfferedStatus;
  /** The unsupported reason; null when the operation is supported and was not selected in review. */
  reason: UnsupportedReason | null;
  fingerprint: string;
}

export interface Publication<Entry extends LockedEntry = LockedOperation> {
  /** `publication-<n>`, global and monotonic across the lock. */
  id: string;
  status: PublicationStatus;
  /** The number of selected operations (the tools this publication offers). */
  toolCount: number;
  /** Digest of the document this publication was made from. */
  documentDigest: string;
  /** Set when published: who, when, with which key, and the JWS over the canonical publication. */
  publishedBy?: string;
  publishedAt?: string;
  keyId?: string;
  /** Recorded when published with `--allow-stale`. */
  allowedStale?: boolean;
  signature?: string;
  /**
   * In use only: every entry of the description that is not a tool (unsupported, or not selected), with its reason.
   * Absent in publications signed before it existed; those still verify.
   */
  notOffered?: NotOfferedEntry[];
  /** The entries: OpenAPI operations, or the tools of an MCP source (the lock keeps one field name for both). */
  operations: Entry[];
}

/** Any publication, whatever its source's kind (what signing and selection read). */
export type AnyPublication = Publication<LockedEntry>;

export type SourceKind = 'openapi' | 'mcp';

export interface OpenApiLockedSource {
  name: string;
  kind: 'openapi';
  /** The document location as written in gateway.yaml (a path relative to the config, or an https URL). */
  document: string;
  /** Digest of the document bytes last imported. */
  documentDigest: string;
  /** At most one `in use` and one `proposed` publication. */
  publications: Publication<LockedOperation>[];
}

export interface McpLockedSource {
  name: string;
  kind: 'mcp';
  /** The endpoint as configured: the URL, or `stdio:` followed by the JSON of the command (mcpSourceLocation). */
  document: string;
  /** RFC 8785 digest of the whole normalised tool list last imported (the MCP counterpart of a document digest). */
  documentDigest: string;
  publications: Publication<LockedMcpTool>[];
}

/** A source of the lock: a tagged union by `kind`. */
export type LockedSource = OpenApiLockedSource | McpLockedSource;

export interface Lockfile {
  lockVersion: 1;
  /** The highest publication number ever allocated in this lock (keeps numbering monotonic). */
  lastPublication: number;
  sources: LockedSource[];
}

export const LOCK_VERSION = 1 as const;

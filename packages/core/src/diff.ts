/**
 * Diff: the live description (imported in memory) against what the lock holds for a source.
 *
 * The baseline is the source's in-use publication, because that is what the gateway serves; a source that
 * was never published is compared with its proposal, and a source missing from the lock with nothing (every
 * live operation is added). Operations are matched by tool name.
 *
 * An in-use publication offers only the operations a person selected and records the others under
 * `notOffered` (with their fingerprints), so a live operation outside its tools is either new or was left out.
 * One left out and unchanged (same fingerprint and support), or any of them while the live document is byte for
 * byte the one the baseline was made from (same digest), is listed as `unpublished` without counting as a
 * change; the others are reported as added, for a person to look at. (A publication signed before `notOffered`
 * existed has only the digest rule.)
 */
import { canonicalJson } from './canonical.js';
import { sourceConfig, type LoadedConfig, type McpSourceConfig } from './config/index.js';
import { GatewayError } from './errors.js';
import { stringifyExact } from './exact-integers.js';
import { inUsePublication, proposedPublication } from './lockfile.js';
import { normaliseMcpTools, type ListedMcpTool } from './mcp/normalise.js';
import { importOpenApi, type ImportedDocument, type ImportOptions } from './openapi/index.js';
import type {
  AnyPublication,
  JsonSchema,
  LockedSource,
  Lockfile,
  McpTool,
  Operation,
  OperationParameter,
  SecuritySchemeSummary,
  SourceKind,
} from './model.js';
import type { ImportedOperations } from './proposal.js';
import { compareText } from './compare-text.js';

export type OperationChangeKind =
  | 'method-changed'
  | 'path-changed'
  | 'server-changed'
  | 'parameter-added'
  | 'parameter-removed'
  | 'parameter-type-changed'
  | 'parameter-required-changed'
  | 'parameter-schema-changed'
  | 'parameter-serialisation-changed'
  | 'body-added'
  | 'body-removed'
  | 'body-media-type-changed'
  | 'body-required-changed'
  | 'body-encoding-changed'
  | 'body-schema-changed'
  | 'security-changed'
  | 'input-schema-changed'
  | 'status-changed'
  | 'description-changed'
  | 'output-schema-changed'
  | 'annotations-changed'
  | 'upstream-name-changed';

export interface OperationChange {
  kind: OperationChangeKind;
  /** For parameter changes: `<in> <name>`, e.g. `query limit`. */
  parameter?: string;
  before?: unknown;
  after?: unknown;
  /** One readable line, e.g. `query parameter limit: type integer → string`. */
  message: string;
}

/** For an MCP tool, `method` is `MCP` and `path` its upstream tool name (one line format for both kinds). */
export interface OperationSummary {
  tool: string;
  method: string;
  path: string;
  status: Operation['status'];
  /** Why it is unsupported (a reason code of docs/lockfile.md); absent when supported. */
  reason?: string;
  /** `each-call` when the lock's tool was reviewed so (docs/approvals.md): a changed or removed one says so. */
  approval?: 'each-call';
}

export interface ChangedOperation extends OperationSummary {
  fingerprintBefore: string;
  fingerprintAfter: string;
  /** True when the request itself changed (the fingerprint differs), not only its documentation. */
  requestChanged: boolean;
  changes: OperationChange[];
}

export interface OperationsDiff {
  added: OperationSummary[];
  removed: OperationSummary[];
  changed: ChangedOperation[];
}

export interface SourceDiff extends OperationsDiff {
  source: string;
  /** What the live description was compared with; null when the source is not in the lock. */
  baseline: { publication: string; status: AnyPublication['status']; documentDigest: string } | null;
  liveDocumentDigest: string;
  /** Live operations the in-use publication leaves out, unchanged since it was published (not a change). */
  unpublished: OperationSummary[];
  hasChanges: boolean;
}

function summaryOfEntry(entry: Operation | McpTool): OperationSummary {
  const reason = entry.status === 'unsupported' && entry.reason ? { reason: entry.reason.code } : {};
  if ('method' in entry) return { ...summary(entry), ...reason };
  return { tool: entry.tool, method: 'MCP', path: entry.name, status: entry.status, ...reason };
}

function summary(operation: Operation): OperationSummary {
  return { tool: operation.tool, method: operation.method, path: operation.path, status: operation.status };
}

function same(a: unknown, b: unknown): boolean {
  return canonicalJson(a ?? null) === canonicalJson(b ?? null);
}

/** The `$defs` of an inputSchema (the importer hoists shared component schemas there). */
function definitionsOf(inputSchema: JsonSchema): Record<string, JsonSchema> {
  if (typeof inputSchema !== 'object' || inputSchema === null) return {};
  const definitions = (inputSchema as { $defs?: Record<string, JsonSchema> }).$defs;
  return definitions && typeof definitions === 'object' ? definitions : {};
}

/**
 * The JSON Schema of one tool argument inside an inputSchema (undefined when absent). A local reference
 * into `$defs` is followed once, so a change inside a referenced schema shows on the argument that uses it.
 */
function argumentSchema(inputSchema: JsonSchema, argument: string): JsonSchema | undefined {
  if (typeof inputSchema !== 'object' || inputSchema === null) return undefined;
  const properties = (inputSchema as { properties?: Record<string, JsonSchema> }).properties;
  const schema = properties && Object.hasOwn(properties, argument) ? properties[argument] : undefined;
  if (typeof schema === 'object' && schema !== null && typeof schema.$ref === 'string') {
    const match = /^#\/\$defs\/([^/]+)$/.exec(schema.$ref);
    const target = match ? definitionsOf(inputSchema)[match[1]!.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
    if (target !== undefined) {
      const { $ref: _ref, ...siblings } = schema;
      return Object.keys(siblings).length === 0 ? target : { ...siblings, allOf: [target] };
    }
  }
  return schema;
}

/** A short type label for a schema: `string`, `integer (int64)`, `string | null`, `object`, `any`. */
export function schemaTypeLabel(schema: JsonSchema | undefined): string {
  if (schema === undefined || schema === true) return 'any';
  if (schema === false) return 'nothing';
  const type = schema.type;
  let label: string;
  if (typeof type === 'string') label = type;
  else if (Array.isArray(type)) label = type.join(' | ');
  else if ('const' in schema) label = `const ${stringifyExact(schema.const)}`;
  else if (Array.isArray(schema.enum)) label = 'enum';
  else if (Array.isArray(schema.oneOf) || Array.isArray(schema.anyOf)) label = 'one of several types';
  else if (typeof schema.properties === 'object') label = 'object';
  else label = 'any';
  return typeof schema.format === 'string' ? `${label} (${schema.format})` : label;
}

function parameterKey(parameter: OperationParameter): string {
  return `${parameter.in} ${parameter.name}`;
}

function describeSecurity(security: Operation['security'], schemes: Record<string, SecuritySchemeSummary>): string {
  if (security.length === 0) return 'none';
  const describeScheme = (name: string): string => {
    const scheme = schemes[name];
    if (!scheme) return name;
    if (scheme.type === 'apiKey') return `${name} (apiKey in ${scheme.in ?? '?'} ${scheme.name ?? '?'})`;
    if (scheme.type === 'http') return `${name} (http ${scheme.scheme ?? '?'})`;
    return `${name} (${scheme.type})`;
  };
  return security
    .map((requirement) => {
      const names = Object.keys(requirement).sort(compareText);
      return names.length === 0
        ? 'anonymous'
        : names
            .map((name) => {
              const scopes = requirement[name] ?? [];
              return describeScheme(name) + (scopes.length ? ` [${scopes.join(', ')}]` : '');
            })
            .join(' + ');
    })
    .join(' or ');
}

/** The readable differences between two versions of one operation (same tool name). */
export function describeOperationChanges(before: Operation, after: Operation): OperationChange[] {
  const changes: OperationChange[] = [
    ...requestLineChanges(before, after),
    ...parameterChanges(before, after),
    ...bodyChanges(before, after),
    ...securityChanges(before, after),
  ];
  return [...changes, ...otherChanges(before, after, changes.length === 0)];
}

/** The method, path and server. */
function requestLineChanges(before: Operation, after: Operation): OperationChange[] {
  const changes: OperationChange[] = [];
  if (before.method !== after.method) {
    changes.push({
      kind: 'method-changed',
      before: before.method,
      after: after.method,
      message: `method ${before.method} → ${after.method}`,
    });
  }
  if (before.path !== after.path) {
    changes.push({ kind: 'path-changed', before: before.path, after: after.path, message: `path ${before.path} → ${after.path}` });
  }
  if (before.server !== after.server) {
    changes.push({
      kind: 'server-changed',
      before: before.server,
      after: after.server,
      message: `server ${before.server ?? '(none)'} → ${after.server ?? '(none)'}`,
    });
  }

  return changes;
}

/** Each parameter added, removed, or changed in type, schema, requiredness or serialisation. */
function parameterChanges(before: Operation, after: Operation): OperationChange[] {
  const changes: OperationChange[] = [];
  const beforeParameters = new Map(before.parameters.map((parameter) => [parameterKey(parameter), parameter]));
  const afterParameters = new Map(after.parameters.map((parameter) => [parameterKey(parameter), parameter]));
  const keys = [...new Set([...beforeParameters.keys(), ...afterParameters.keys()])].sort(compareText);
  for (const key of keys) {
    const old = beforeParameters.get(key);
    const current = afterParameters.get(key);
    const label = `${key.replace(' ', ' parameter ')}`;
    if (!old && current) {
      const type = schemaTypeLabel(argumentSchema(after.inputSchema, current.argument));
      changes.push({
        kind: 'parameter-added',
        parameter: key,
        after: { type, required: current.required },
        message: `${label} added (${type}, ${current.required ? 'required' : 'optional'})`,
      });
      continue;
    }
    if (old && !current) {
      changes.push({ kind: 'parameter-removed', parameter: key, message: `${label} removed` });
      continue;
    }
    if (!old || !current) continue;
    const oldSchema = argumentSchema(before.inputSchema, old.argument);
    const newSchema = argumentSchema(after.inputSchema, current.argument);
    const oldType = schemaTypeLabel(oldSchema);
    const newType = schemaTypeLabel(newSchema);
    if (oldType !== newType) {
      changes.push({
        kind: 'parameter-type-changed',
        parameter: key,
        before: oldType,
        after: newType,
        message: `${label}: type ${oldType} → ${newType}`,
      });
    } else if (!same(oldSchema, newSchema)) {
      changes.push({
        kind: 'parameter-schema-changed',
        parameter: key,
        before: oldSchema,
        after: newSchema,
        message: `${label}: schema changed`,
      });
    }
    if (old.required !== current.required) {
      changes.push({
        kind: 'parameter-required-changed',
        parameter: key,
        before: old.required,
        after: current.required,
        message: `${label}: ${old.required ? 'required' : 'optional'} → ${current.required ? 'required' : 'optional'}`,
      });
    }
    const serialisation = (parameter: OperationParameter) => ({
      argument: parameter.argument,
      style: parameter.style,
      explode: parameter.explode,
      allowReserved: parameter.allowReserved,
      contentType: parameter.contentType ?? null,
    });
    if (!same(serialisation(old), serialisation(current))) {
      changes.push({
        kind: 'parameter-serialisation-changed',
        parameter: key,
        before: serialisation(old),
        after: serialisation(current),
        message: `${label}: serialisation changed (style ${old.style} → ${current.style}, explode ${old.explode} → ${current.explode})`,
      });
    }
  }
  return changes;
}

/** The request body added, removed, or changed in media type, encoding, requiredness or schema. */
function bodyChanges(before: Operation, after: Operation): OperationChange[] {
  const changes: OperationChange[] = [];
  if (!before.body && after.body) {
    changes.push({
      kind: 'body-added',
      after: after.body.mediaType,
      message: `request body added (${after.body.mediaType}, ${after.body.required ? 'required' : 'optional'})`,
    });
  } else if (before.body && !after.body) {
    changes.push({ kind: 'body-removed', before: before.body.mediaType, message: `request body removed (was ${before.body.mediaType})` });
  } else if (before.body && after.body) {
    if (before.body.mediaType !== after.body.mediaType) {
      changes.push({
        kind: 'body-media-type-changed',
        before: before.body.mediaType,
        after: after.body.mediaType,
        message: `request body media type ${before.body.mediaType} → ${after.body.mediaType}`,
      });
    }
    const encoding = (body: NonNullable<Operation['body']>) => ({ sendAs: body.sendAs ?? null, encoding: body.encoding ?? null });
    if (!same(encoding(before.body), encoding(after.body))) {
      changes.push({
        kind: 'body-encoding-changed',
        before: encoding(before.body),
        after: encoding(after.body),
        message: 'request body encoding changed (how form properties are serialised, or the type sent)',
      });
    }
    if (before.body.required !== after.body.required) {
      changes.push({
        kind: 'body-required-changed',
        before: before.body.required,
        after: after.body.required,
        message: `request body ${before.body.required ? 'required' : 'optional'} → ${after.body.required ? 'required' : 'optional'}`,
      });
    }
    const oldSchema = argumentSchema(before.inputSchema, before.body.argument);
    const newSchema = argumentSchema(after.inputSchema, after.body.argument);
    if (!same(oldSchema, newSchema)) {
      changes.push({
        kind: 'body-schema-changed',
        before: oldSchema,
        after: newSchema,
        message: `request body schema changed${describeSchemaChange(oldSchema, newSchema)}`,
      });
    }
  }
  return changes;
}

/** The security requirements or schemes. */
function securityChanges(before: Operation, after: Operation): OperationChange[] {
  if (same(before.security, after.security) && same(before.securitySchemes, after.securitySchemes)) return [];
  const old = describeSecurity(before.security, before.securitySchemes);
  const current = describeSecurity(after.security, after.securitySchemes);
  return [
    {
      kind: 'security-changed',
      before: { security: before.security, securitySchemes: before.securitySchemes },
      after: { security: after.security, securitySchemes: after.securitySchemes },
      message: old === current ? 'security scheme details changed' : `security ${old} → ${current}`,
    },
  ];
}

/**
 * What the parts above do not name: the rest of the input schema (only when nothing else was found), the support
 * status, and the text the AI client reads.
 */
function otherChanges(before: Operation, after: Operation, nothingNamed: boolean): OperationChange[] {
  const changes: OperationChange[] = [];
  if (before.fingerprint !== after.fingerprint && nothingNamed) {
    // Everything we name is equal, yet the request differs: the rest of the input schema (shared
    // definitions reached through nested references, or the schema's frame) changed.
    const before$defs = definitionsOf(before.inputSchema);
    const after$defs = definitionsOf(after.inputSchema);
    const names = [...new Set([...Object.keys(before$defs), ...Object.keys(after$defs)])]
      .filter((name) => !same(before$defs[name], after$defs[name]))
      .sort(compareText);
    changes.push({
      kind: 'input-schema-changed',
      message: names.length ? `input schema changed (definitions: ${names.join(', ')})` : 'input schema changed',
    });
  }
  if (before.status !== after.status) {
    changes.push({
      kind: 'status-changed',
      before: before.status,
      after: after.status,
      message: `status ${before.status} → ${after.status}${after.reason ? ` (${after.reason.code}: ${after.reason.message})` : ''}`,
    });
  }
  if (before.description !== after.description || before.title !== after.title) {
    changes.push({ kind: 'description-changed', message: 'title or description changed (what the AI client reads)' });
  }
  return changes;
}

/** A hint of which top-level properties of an object schema changed, e.g. ` (properties added: note)`. */
function describeSchemaChange(before: JsonSchema | undefined, after: JsonSchema | undefined): string {
  const propertiesOf = (schema: JsonSchema | undefined): Record<string, unknown> =>
    typeof schema === 'object' && schema !== null && typeof schema.properties === 'object' && schema.properties !== null
      ? (schema.properties as Record<string, unknown>)
      : {};
  const old = propertiesOf(before);
  const current = propertiesOf(after);
  const added = Object.keys(current)
    .filter((name) => !(name in old))
    .sort(compareText);
  const removed = Object.keys(old)
    .filter((name) => !(name in current))
    .sort(compareText);
  const changed = Object.keys(current)
    .filter((name) => name in old && !same(old[name], current[name]))
    .sort(compareText);
  const parts = [
    added.length ? `properties added: ${added.join(', ')}` : '',
    removed.length ? `properties removed: ${removed.join(', ')}` : '',
    changed.length ? `properties changed: ${changed.join(', ')}` : '',
  ].filter(Boolean);
  return parts.length ? ` (${parts.join('; ')})` : '';
}

/** What changed in an MCP tool, field by field (all of it is what the model sees, so all of it counts). */
export function describeMcpToolChanges(before: McpTool, after: McpTool): OperationChange[] {
  const changes: OperationChange[] = [];
  if (before.name !== after.name) {
    changes.push({
      kind: 'upstream-name-changed',
      before: before.name,
      after: after.name,
      message: `upstream name ${before.name} → ${after.name}`,
    });
  }
  if (before.status !== after.status) {
    changes.push({
      kind: 'status-changed',
      before: before.status,
      after: after.status,
      message: `status ${before.status} → ${after.status}${after.reason ? ` (${after.reason.code}: ${after.reason.message})` : ''}`,
    });
  }
  if (!same(before.inputSchema, after.inputSchema)) {
    changes.push({
      kind: 'input-schema-changed',
      message: `input schema changed${describeSchemaChange(before.inputSchema, after.inputSchema)}`,
    });
  }
  if (!same(before.outputSchema, after.outputSchema)) {
    changes.push({
      kind: 'output-schema-changed',
      message: `output schema changed${describeSchemaChange(before.outputSchema ?? undefined, after.outputSchema ?? undefined)}`,
    });
  }
  if (!same(before.annotations, after.annotations)) {
    changes.push({ kind: 'annotations-changed', before: before.annotations, after: after.annotations, message: 'annotations changed' });
  }
  if (before.description !== after.description || before.title !== after.title) {
    changes.push({ kind: 'description-changed', message: 'title or description changed (what the AI client reads)' });
  }
  return changes;
}

/**
 * What changed between two versions of one tool, of either kind: the sentences `gateway diff`, the consent page
 * and the console all show (one source of the words).
 */
export function describeToolChanges(before: Operation | McpTool, after: Operation | McpTool): OperationChange[] {
  if ('method' in before && 'method' in after) return describeOperationChanges(before, after);
  if (!('method' in before) && !('method' in after)) return describeMcpToolChanges(before, after);
  return [{ kind: 'status-changed', message: 'the source kind changed' }];
}

/** The review choice of a lock entry, for its summary (nothing for a live entry or one without). */
function approvalOf(entry: Operation | McpTool): Pick<OperationSummary, 'approval'> {
  return (entry as { approval?: unknown }).approval === 'each-call' ? { approval: 'each-call' } : {};
}

/** What `gateway diff`, the consent page and the console say of a tool reviewed `approval: each-call`. */
export const EACH_CALL_NOTE = "reviewed each-call: every call waits for a person's approval";

/** Added, removed and changed operations (or MCP tools), matched by tool name; each list sorted by tool name. */
export function diffOperations(baseline: readonly (Operation | McpTool)[], live: readonly (Operation | McpTool)[]): OperationsDiff {
  const before = new Map(baseline.map((operation) => [operation.tool, operation]));
  const after = new Map(live.map((operation) => [operation.tool, operation]));
  const added: OperationSummary[] = [];
  const changed: ChangedOperation[] = [];
  for (const [tool, operation] of after) {
    const old = before.get(tool);
    if (!old) {
      added.push(summaryOfEntry(operation));
      continue;
    }
    const changes = describeToolChanges(old, operation);
    if (changes.length > 0) {
      changed.push({
        ...summaryOfEntry(operation),
        ...approvalOf(old),
        fingerprintBefore: old.fingerprint,
        fingerprintAfter: operation.fingerprint,
        requestChanged: old.fingerprint !== operation.fingerprint,
        changes,
      });
    }
  }
  const removed = [...before.values()]
    .filter((operation) => !after.has(operation.tool))
    .map((operation) => ({ ...summaryOfEntry(operation), ...approvalOf(operation) }));
  const byTool = (a: { tool: string }, b: { tool: string }) => compareText(a.tool, b.tool);
  return { added: added.sort(byTool), removed: removed.sort(byTool), changed: changed.sort(byTool) };
}

/** The publication a live description is compared with (see the module comment). */
export function diffBaseline(source: LockedSource | undefined): AnyPublication | undefined {
  if (!source) return undefined;
  return inUsePublication(source) ?? proposedPublication(source);
}

/** Compares one source's live description with the lock. */
export function diffSource(
  sourceName: string,
  lockedSource: LockedSource | undefined,
  live: { documentDigest: string; operations: readonly Operation[] | readonly McpTool[] },
): SourceDiff {
  const baseline = diffBaseline(lockedSource);
  const result = diffOperations(baseline?.operations ?? [], live.operations);
  let unpublished: OperationSummary[] = [];
  if (baseline && baseline.status === 'in use' && baseline.documentDigest === live.documentDigest) {
    unpublished = result.added;
    result.added = [];
  } else if (baseline?.status === 'in use' && baseline.notOffered !== undefined) {
    // What the publication records as left out, still the same operation: not new, a person already decided.
    const liveByTool = new Map((live.operations as readonly (Operation | McpTool)[]).map((operation) => [operation.tool, operation]));
    const leftOut = new Map(baseline.notOffered.map((entry) => [entry.tool, entry]));
    const isUnchanged = (tool: string): boolean => {
      const entry = leftOut.get(tool);
      const current = liveByTool.get(tool);
      return (
        entry !== undefined &&
        current !== undefined &&
        entry.fingerprint === current.fingerprint &&
        (entry.status === 'unsupported') === (current.status !== 'supported')
      );
    };
    unpublished = result.added.filter((operation) => isUnchanged(operation.tool));
    result.added = result.added.filter((operation) => !isUnchanged(operation.tool));
  }
  return {
    source: sourceName,
    baseline: baseline ? { publication: baseline.id, status: baseline.status, documentDigest: baseline.documentDigest } : null,
    liveDocumentDigest: live.documentDigest,
    ...result,
    unpublished,
    hasChanges: result.added.length + result.removed.length + result.changed.length > 0,
  };
}

/** Lists an MCP source's tools (injected: @gateway/runtime's mcp/ client does it; core opens no connection). */
export type McpToolLister = (source: McpSourceConfig, sourceName: string, loaded: LoadedConfig) => Promise<ListedMcpTool[]>;

export interface LiveImportOptions extends Required<Pick<ImportOptions, 'fetchText'>> {
  /** Needed for an MCP source. */
  listMcpTools?: McpToolLister;
  /** Tool names other sources of the lock hold (the prefix rule of docs/sources-mcp.md); see otherSourcesToolNames. */
  otherToolNames?: ReadonlySet<string>;
}

/** Every tool name the other sources of a lock offer or propose: an MCP tool taking one of them gets prefixed. */
export function otherSourcesToolNames(lock: Lockfile, sourceName: string): Set<string> {
  const names = new Set<string>();
  for (const source of lock.sources) {
    if (source.name === sourceName) continue;
    for (const publication of source.publications as AnyPublication[]) for (const entry of publication.operations) names.add(entry.tool);
  }
  return names;
}

/**
 * Imports a configured source's live description in memory, with the configuration's limits; nothing is
 * written. `fetchText` is required so no caller can forget the SSRF guard: the CLI and the server pass
 * @gateway/runtime's guarded document fetcher. `listMcpTools` lists an MCP source.
 */
export async function importLiveSource(
  loaded: LoadedConfig,
  sourceName: string,
  options: LiveImportOptions,
): Promise<ImportedOperations & { kind: SourceKind }> {
  const source = sourceConfig(loaded, sourceName);
  switch (source.kind) {
    case 'openapi': {
      const limits = loaded.config.import ?? {};
      const imported: ImportedDocument = await importOpenApi(source.document, {
        baseDirectory: loaded.directory,
        allowRemoteRefs: source.allowRemoteRefs ?? false,
        ...(source.server === undefined ? {} : { server: source.server }),
        ...(limits.maxDocumentBytes === undefined ? {} : { maxDocumentBytes: limits.maxDocumentBytes }),
        ...(limits.timeoutMs === undefined ? {} : { timeoutMs: limits.timeoutMs }),
        fetchText: options.fetchText,
      });
      return { kind: 'openapi', documentDigest: imported.documentDigest, operations: imported.operations };
    }
    case 'mcp': {
      if (!options.listMcpTools) {
        throw new GatewayError('MCP_LISTER_MISSING', `source '${sourceName}' is an MCP server; this command cannot connect to one`);
      }
      const listed = await options.listMcpTools(source, sourceName, loaded);
      return { kind: 'mcp', ...normaliseMcpTools(sourceName, listed, options.otherToolNames ?? new Set()) };
    }
  }
}

/**
 * The words a diff uses besides each change's own sentence (OperationChange.message): one wording for
 * `gateway diff` (text and Markdown), the admin API, `gateway status`, the consent page and the console.
 */
export function operationLabel(operation: OperationSummary): string {
  return `${operation.method} ${operation.path}`;
}

/** What a diff says of an operation only in the live description. */
export function addedNote(operation: OperationSummary): string {
  const unsupported = operation.reason ? `, unsupported: ${operation.reason}` : ', unsupported';
  return `new in the live description${operation.status === 'supported' ? '' : unsupported}`;
}

/** What a diff says of an operation no longer in the live description. */
export const REMOVED_NOTE = 'no longer in the live description';

/** What a diff says of a changed operation whose request is the same (only what the AI client reads changed). */
export const DOCUMENTATION_ONLY_NOTE = 'documentation only';

/**
 * A source's diff in sentences, one per operation (what the admin API and `gateway status` show of a proposal):
 * `changed create_order (POST /orders): request body schema changed (properties added: note)`.
 */
export function describeDiffInWords(diff: SourceDiff): string[] {
  const label = (operation: OperationSummary): string => `${operation.tool} (${operationLabel(operation)})`;
  const lines: string[] = [];
  for (const operation of diff.changed) {
    const what = operation.changes.map((change) => change.message).join('; ');
    lines.push(`changed ${label(operation)}${operation.requestChanged ? '' : `, ${DOCUMENTATION_ONLY_NOTE}`}: ${what}`);
  }
  for (const operation of diff.removed) lines.push(`removed ${label(operation)}: ${REMOVED_NOTE}`);
  for (const operation of diff.added) lines.push(`added ${label(operation)}: ${addedNote(operation)}`);
  return lines;
}

/**
 * Renders an operation's request shape for a person: one line per argument (type, required, where it goes
 * in the request), and the body schema unfolded to a bounded depth. Circular schemas (kept as `$defs` and
 * `$ref` by the importer) are named, never expanded twice on one path.
 */
import {
  MAX_DESCRIPTION_LENGTH,
  escapeHiddenCharacters,
  escapedCodePoint,
  hiddenCharactersInValue,
  stringifyExact,
  type JsonSchema,
  type LockedEntry,
  type LockedMcpTool,
  type LockedOperation,
} from '@gateway/core';

/** How deep nested object properties are unfolded below an argument. */
const MAX_DEPTH = 3;
/** How many properties of one object are listed before "… n more". */
const MAX_PROPERTIES = 25;
const MAX_ENUM_VALUES = 6;
/** Argument lines shown per operation; `--json` has everything. */
const MAX_ROWS = 60;
const MAX_TYPE_LENGTH = 48;

type SchemaObject = { [key: string]: unknown };

interface Row {
  depth: number;
  name: string;
  type: string;
  required: boolean;
  location: string;
  description: string;
}

/** `GET /orders/{id}` for an operation, `MCP <upstream name>` for an MCP tool: the line that says what is called. */
export function entryTarget(entry: LockedEntry): string {
  return 'method' in entry ? `${entry.method} ${entry.path}` : `MCP ${entry.name}`;
}

/**
 * The lines of one entry of a proposal (an operation or an MCP tool) in `gateway review`. Hidden characters
 * (invisible, tag, bidirectional controls; core's tool-text) are shown escaped as `\u{E0049}`, never raw, and an
 * entry holding any, anywhere in its text or schemas, gets a flag line naming them under its first line.
 */
export function renderEntry(entry: LockedEntry): string[] {
  const lines = ('method' in entry ? renderOperation(entry) : renderMcpTool(entry)).map((line) => escapeHiddenCharacters(line));
  const flags = [hiddenTextFlag(entry), approvalLine(entry)].filter((line): line is string => line !== null);
  return [lines[0]!, ...flags, ...lines.slice(1)];
}

/** `    approval: each call, by …`: the line of a tool whose calls wait for a person (docs/approvals.md), or null. */
export function approvalLine(entry: LockedEntry, indent = '    '): string | null {
  if (entry.approval !== 'each-call') return null;
  return `${indent}approval: each call waits for ${describeApprovers(entry.approvers)}`;
}

/** Who approves: `the session's own person`, or the names (with `@operators` said in words). */
export function describeApprovers(approvers: readonly string[] | undefined): string {
  if (!approvers || approvers.length === 0) return "the session's own person";
  return approvers.map((approver) => (approver === '@operators' ? 'an operator' : approver)).join(' or ');
}

/** How many hidden characters a flag names before "and n more". */
const FLAGGED_CHARACTERS = 8;

/** `    ! hidden characters …`: the flag of an entry whose text holds hidden characters, or null. */
export function hiddenTextFlag(value: unknown, indent = '    '): string | null {
  const hidden = hiddenCharactersInValue(value);
  if (hidden.length === 0) return null;
  const named = hidden.slice(0, FLAGGED_CHARACTERS).map(escapedCodePoint).join(' ');
  const more = hidden.length > FLAGGED_CHARACTERS ? ` and ${hidden.length - FLAGGED_CHARACTERS} more` : '';
  return `${indent}! HIDDEN CHARACTERS, shown escaped: ${named}${more} (invisible here, read by a model)`;
}

/**
 * An MCP tool, shown like an operation's request shape: its arguments from the inputSchema, then what it
 * returns (outputSchema) and its annotations, which are the upstream's claims: shown, never trusted.
 */
export function renderMcpTool(tool: LockedMcpTool): string[] {
  const mark = tool.status !== 'supported' ? '[-]' : tool.selected ? '[x]' : '[ ]';
  const status = tool.status === 'supported' ? 'supported' : `unsupported ${tool.reason?.code ?? ''}: ${tool.reason?.message ?? ''}`.trim();
  const lines = [`${mark} ${tool.tool}  ${entryTarget(tool)}  ${status}`];
  if (tool.title) lines.push(`    title: ${firstLine(tool.title)}`);
  // The whole description, every line: it is what the model reads, so the reviewer reads all of it. Only one
  // over the bound (unsupported for it) is cut there.
  const description =
    tool.description.length > MAX_DESCRIPTION_LENGTH
      ? tool.description.slice(0, MAX_DESCRIPTION_LENGTH).replace(/[\uD800-\uDBFF]$/, '')
      : tool.description;
  for (const line of description.split('\n')) if (line.trim()) lines.push(`    | ${line.trimEnd()}`);
  if (description.length < tool.description.length) {
    lines.push(`    | … ${tool.description.length - description.length} more characters (\`--json\` shows the whole description)`);
  }
  if (tool.annotations) {
    const hints = Object.entries(tool.annotations).map(([key, value]) => `${key}=${JSON.stringify(value)}`);
    lines.push(`    annotations (upstream claims, not enforced): ${hints.join(', ')}`);
  }
  lines.push(...renderRows('arguments', schemaRows(tool.inputSchema, new Map())));
  if (tool.outputSchema !== null) lines.push(...renderRows('returns (structured content)', schemaRows(tool.outputSchema, new Map())));
  return lines;
}

function renderRows(heading: string, rows: Row[]): string[] {
  if (rows.length === 0) return [`    ${heading}: none`];
  const lines = [`    ${heading}:`];
  const nameWidth = Math.min(32, Math.max(...rows.map((row) => row.depth * 2 + row.name.length)));
  const typeWidth = Math.min(MAX_TYPE_LENGTH, Math.max(...rows.map((row) => row.type.length)));
  for (const row of rows.slice(0, MAX_ROWS)) {
    const name = `${'  '.repeat(row.depth)}${row.name}`.padEnd(nameWidth);
    const parts = [name, clip(row.type, MAX_TYPE_LENGTH).padEnd(typeWidth), row.required ? 'required' : 'optional'];
    if (row.location) parts.push(row.location);
    if (row.description) parts.push(row.description);
    lines.push(`      ${parts.join('  ').trimEnd()}`);
  }
  if (rows.length > MAX_ROWS) lines.push(`      … ${rows.length - MAX_ROWS} more lines (\`--json\` shows the whole schema)`);
  return lines;
}

/** The lines of one operation in `gateway review`, without trailing newlines. */
export function renderOperation(operation: LockedOperation): string[] {
  const mark = operation.status !== 'supported' ? '[-]' : operation.selected ? '[x]' : '[ ]';
  const status =
    operation.status === 'supported'
      ? 'supported'
      : `unsupported ${operation.reason?.code ?? ''}: ${operation.reason?.message ?? ''}`.trim();
  const lines = [`${mark} ${operation.tool}  ${operation.method} ${operation.path}  ${status}`];
  const summary = firstLine(operation.title ?? operation.description);
  if (summary) lines.push(`    ${summary}`);
  if (operation.server) lines.push(`    server: ${operation.server}`);
  if (operation.security.length > 0) {
    lines.push(`    security: ${describeSecurity(operation)}`);
    const schemes = describeSchemes(operation);
    if (schemes) lines.push(`    schemes: ${schemes}`);
  }
  const rows = argumentRows(operation);
  if (rows.length === 0) {
    lines.push('    arguments: none');
  } else {
    lines.push('    arguments:');
    const nameWidth = Math.min(32, Math.max(...rows.map((row) => row.depth * 2 + row.name.length)));
    const typeWidth = Math.min(MAX_TYPE_LENGTH, Math.max(...rows.map((row) => row.type.length)));
    for (const row of rows.slice(0, MAX_ROWS)) {
      const name = `${'  '.repeat(row.depth)}${row.name}`.padEnd(nameWidth);
      const parts = [name, clip(row.type, MAX_TYPE_LENGTH).padEnd(typeWidth), row.required ? 'required' : 'optional'];
      if (row.location) parts.push(row.location);
      if (row.description) parts.push(row.description);
      lines.push(`      ${parts.join('  ').trimEnd()}`);
    }
    if (rows.length > MAX_ROWS) lines.push(`      … ${rows.length - MAX_ROWS} more lines (\`--json\` shows the whole inputSchema)`);
  }
  return lines;
}

/** `a or b + c`: alternatives (any one suffices) of requirements (all needed), by scheme name. */
function describeSecurity(operation: LockedOperation): string {
  return operation.security
    .map((requirement) => (Object.keys(requirement).length === 0 ? 'none' : Object.keys(requirement).join(' + ')))
    .join(' or ');
}

/** Each scheme the security line names, once: `bearerAuth = http bearer, apiKeyQuery = apiKey in query "api_key"`. */
function describeSchemes(operation: LockedOperation): string {
  return Object.entries(operation.securitySchemes)
    .map(([name, scheme]) => {
      if (scheme.type === 'apiKey') return `${name} = apiKey in ${scheme.in ?? '?'} ${JSON.stringify(scheme.name ?? '')}`;
      if (scheme.type === 'http') return `${name} = http ${scheme.scheme ?? ''}`.trimEnd();
      return `${name} = ${scheme.type}`;
    })
    .join(', ');
}

/** One row per tool argument, in the order of the inputSchema's properties, nested rows for the body. */
export function argumentRows(operation: LockedOperation): Row[] {
  const locations = new Map<string, string>();
  for (const parameter of operation.parameters) {
    locations.set(parameter.argument, parameter.contentType ? `${parameter.in} (${parameter.contentType})` : parameter.in);
  }
  if (operation.body) {
    const sent = operation.body.sendAs ? `, sent as ${operation.body.sendAs}` : '';
    locations.set(operation.body.argument, `body (${operation.body.mediaType}${sent})`);
  }
  return schemaRows(operation.inputSchema, locations);
}

/** One row per property of an object schema, nested rows below each (bounded depth). */
function schemaRows(schema: JsonSchema, locations: Map<string, string>): Row[] {
  const root = asObject(schema);
  const definitions = root ? collectDefinitions(root) : new Map<string, JsonSchema>();
  const properties = root ? (asObject(root.properties) ?? {}) : {};
  const required = new Set(root && Array.isArray(root.required) ? (root.required as string[]) : []);

  const rows: Row[] = [];
  for (const [argument, schema] of Object.entries(properties)) {
    rows.push({
      depth: 0,
      name: argument,
      type: describeType(schema as JsonSchema),
      required: required.has(argument),
      location: locations.get(argument) ?? '',
      description: firstLine(descriptionOf(schema as JsonSchema)),
    });
    addNestedRows(rows, schema as JsonSchema, definitions, 1, new Set());
  }
  return rows;
}

function addNestedRows(rows: Row[], schema: JsonSchema, definitions: Map<string, JsonSchema>, depth: number, seen: Set<string>): void {
  if (depth > MAX_DEPTH) return;
  let object = asObject(schema);
  if (!object) return;
  const reference = typeof object.$ref === 'string' ? object.$ref : undefined;
  if (reference !== undefined) {
    // A reference already being unfolded on this path is a cycle: its name in the type column says enough.
    if (seen.has(reference)) return;
    const target = definitions.get(reference);
    if (target === undefined) return;
    seen = new Set(seen).add(reference);
    object = asObject(target);
    if (!object) return;
  }
  if (object.type === 'array' || object.items !== undefined) {
    const items = object.items as JsonSchema | undefined;
    if (items !== undefined) addNestedRows(rows, items, definitions, depth, seen);
    return;
  }
  // allOf branches all apply, so their properties are the object's; oneOf/anyOf stay a one-line type.
  if (Array.isArray(object.allOf)) {
    for (const branch of object.allOf) addNestedRows(rows, branch as JsonSchema, definitions, depth, seen);
  }
  const properties = asObject(object.properties);
  if (!properties) return;
  const required = new Set(Array.isArray(object.required) ? (object.required as string[]) : []);
  const entries = Object.entries(properties);
  for (const [name, child] of entries.slice(0, MAX_PROPERTIES)) {
    rows.push({
      depth,
      name,
      type: describeType(child as JsonSchema),
      required: required.has(name),
      location: '',
      description: firstLine(descriptionOf(child as JsonSchema)),
    });
    if (depth < MAX_DEPTH) addNestedRows(rows, child as JsonSchema, definitions, depth + 1, seen);
  }
  if (entries.length > MAX_PROPERTIES) {
    rows.push({ depth, name: `… ${entries.length - MAX_PROPERTIES} more`, type: '', required: false, location: '', description: '' });
  }
}

/** A short type for one schema: `string (date-time)`, `array of Pet`, `one of: string | integer`, … */
export function describeType(schema: JsonSchema | undefined): string {
  if (schema === undefined || schema === true) return 'any';
  if (schema === false) return 'never';
  if (typeof schema.$ref === 'string') return referenceName(schema.$ref);
  // stringifyExact: a value beyond 2^53 is a BigInt (docs/lockfile.md › Large integers).
  if (schema.const !== undefined) return `= ${stringifyExact(schema.const)}`;
  if (Array.isArray(schema.enum)) {
    const values = schema.enum.slice(0, MAX_ENUM_VALUES).map((value) => stringifyExact(value));
    if (schema.enum.length > MAX_ENUM_VALUES) values.push('…');
    return `enum ${values.join(' | ')}`;
  }
  for (const keyword of ['oneOf', 'anyOf', 'allOf'] as const) {
    const branches = schema[keyword];
    if (Array.isArray(branches)) {
      const label = keyword === 'oneOf' ? 'one of' : keyword === 'anyOf' ? 'any of' : 'all of';
      return `${label}: ${branches.map((branch) => describeType(branch as JsonSchema)).join(' | ')}`;
    }
  }
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : typeof schema.type === 'string' ? [schema.type] : [];
  const format = typeof schema.format === 'string' ? ` (${schema.format})` : '';
  if (types.includes('array') || (types.length === 0 && schema.items !== undefined)) {
    const rest = types.filter((type) => type !== 'array');
    const items = `array of ${describeType(schema.items as JsonSchema | undefined)}`;
    return rest.length > 0 ? `${items} | ${rest.join(' | ')}` : items;
  }
  if (types.length === 0) return schema.properties !== undefined ? 'object' : 'any';
  return `${types.join(' | ')}${format}`;
}

function referenceName(reference: string): string {
  const name = reference.split('/').pop() ?? reference;
  return name.replace(/~1/g, '/').replace(/~0/g, '~');
}

function collectDefinitions(root: SchemaObject): Map<string, JsonSchema> {
  const definitions = new Map<string, JsonSchema>();
  for (const keyword of ['$defs', 'definitions'] as const) {
    const group = asObject(root[keyword]);
    if (!group) continue;
    for (const [name, schema] of Object.entries(group)) {
      definitions.set(`#/${keyword}/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`, schema as JsonSchema);
    }
  }
  return definitions;
}

function descriptionOf(schema: JsonSchema): string {
  const object = asObject(schema);
  return object && typeof object.description === 'string' ? object.description : '';
}

function asObject(value: unknown): SchemaObject | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as SchemaObject) : undefined;
}

function clip(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

function firstLine(text: string | null | undefined): string {
  const line = (text ?? '').trim().split('\n')[0]?.trim() ?? '';
  return line.length > 100 ? `${line.slice(0, 99)}…` : line;
}

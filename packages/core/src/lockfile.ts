import { lstat, open, readFile, readdir, rename, unlink, writeFile } from 'node:fs/promises';
import { dirname, basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { CORE_SCHEMA, defineScalarTag, intCoreTag, load, NOT_RESOLVED } from 'js-yaml';
import { stringify, type ScalarTag } from 'yaml';
import lockfileSchema from './schemas/lockfile.schema.json' with { type: 'json' };
import { GatewayError } from './errors.js';
import { mayHoldUnsafeIntegers, toExactInteger } from './exact-integers.js';
import { createAjv, describeSchemaErrors, type ValidateFunction } from './json-schema-validator.js';
import {
  LOCK_VERSION,
  type AnyPublication,
  type LockedEntry,
  type LockedMcpTool,
  type LockedOperation,
  type Lockfile,
  type LockedSource,
  type NotOfferedEntry,
  type Publication,
  type ReviewChoices,
  type SourceKind,
} from './model.js';
import { compareEntries } from './source-kinds.js';
import { LOCK_MAX_DEPTH, nestingDepth } from './lock-depth.js';
import { compareText } from './compare-text.js';
import { hiddenCharactersIn } from './tool-text.js';

export { lockfileSchema };

const LOCK_HEADER =
  '# tools.lock: the reviewed tools this gateway may serve. Written by the `gateway` CLI; review it in pull\n' +
  '# requests and change it only with `gateway import`, `review` and `publish` (docs/lockfile.md).\n';

// Compiled on first use: commands that never read a lock (and every process start) skip the cost.
let lockShapeValidator: ValidateFunction | undefined;
function validateLockShape(value: unknown): ValidateFunction {
  lockShapeValidator ??= createAjv().compile(lockfileSchema);
  lockShapeValidator(value);
  return lockShapeValidator;
}

export { LOCK_MAX_DEPTH, MAX_INPUT_SCHEMA_DEPTH, nestingDepth } from './lock-depth.js';

export function emptyLock(): Lockfile {
  return { lockVersion: LOCK_VERSION, lastPublication: 0, sources: [] };
}

export function publicationNumber(id: string): number {
  const match = /^publication-(\d+)$/.exec(id);
  return match ? Number(match[1]) : Number.NaN;
}

/** Operations in lock order: by path, then method, then tool name. */
export function compareOperations(a: LockedOperation, b: LockedOperation): number {
  return compareEntries('openapi', a, b);
}

/** Field order for every object kind, so the file reads the same way everywhere. */
function orderOperation(operation: LockedOperation): LockedOperation {
  return {
    tool: operation.tool,
    operationId: operation.operationId,
    method: operation.method,
    path: operation.path,
    title: operation.title,
    description: operation.description,
    status: operation.status,
    reason: operation.reason,
    selected: operation.selected,
    ...reviewChoicesOf(operation),
    server: operation.server,
    parameters: operation.parameters.map((parameter) => ({
      name: parameter.name,
      in: parameter.in,
      argument: parameter.argument,
      required: parameter.required,
      style: parameter.style,
      explode: parameter.explode,
      allowReserved: parameter.allowReserved,
      ...(parameter.contentType === undefined ? {} : { contentType: parameter.contentType }),
    })),
    body: operation.body,
    security: operation.security,
    securitySchemes: sortKeys(operation.securitySchemes),
    inputSchema: operation.inputSchema,
    fingerprint: operation.fingerprint,
  };
}

function orderMcpTool(tool: LockedMcpTool): LockedMcpTool {
  return {
    tool: tool.tool,
    name: tool.name,
    title: tool.title,
    description: tool.description,
    status: tool.status,
    reason: tool.reason,
    selected: tool.selected,
    ...reviewChoicesOf(tool),
    inputSchema: tool.inputSchema,
    outputSchema: tool.outputSchema,
    annotations: tool.annotations,
    fingerprint: tool.fingerprint,
  };
}

/** The review choices an entry has, in field order; nothing for an entry without (docs/approvals.md). */
function reviewChoicesOf(entry: ReviewChoices): ReviewChoices {
  return {
    ...(entry.approval === undefined ? {} : { approval: entry.approval }),
    ...(entry.approvers === undefined ? {} : { approvers: [...entry.approvers] }),
  };
}

function orderNotOffered(entry: NotOfferedEntry): NotOfferedEntry {
  return { tool: entry.tool, operation: entry.operation, status: entry.status, reason: entry.reason, fingerprint: entry.fingerprint };
}

function orderEntry(kind: SourceKind, entry: LockedEntry): LockedEntry {
  switch (kind) {
    case 'openapi':
      return orderOperation(entry as LockedOperation);
    case 'mcp':
      return orderMcpTool(entry as LockedMcpTool);
  }
}

function orderPublication<P extends AnyPublication>(kind: SourceKind, publication: P): P {
  // Built key by key: the YAML lists the fields in this order (what is not offered before the long list of tools).
  const ordered = {
    id: publication.id,
    status: publication.status,
    toolCount: publication.toolCount,
    documentDigest: publication.documentDigest,
  } as Publication<LockedEntry>;
  if (publication.publishedBy !== undefined) ordered.publishedBy = publication.publishedBy;
  if (publication.publishedAt !== undefined) ordered.publishedAt = publication.publishedAt;
  if (publication.keyId !== undefined) ordered.keyId = publication.keyId;
  if (publication.allowedStale !== undefined) ordered.allowedStale = publication.allowedStale;
  if (publication.signature !== undefined) ordered.signature = publication.signature;
  if (publication.notOffered !== undefined) {
    ordered.notOffered = [...publication.notOffered].sort((a, b) => compareText(a.tool, b.tool)).map(orderNotOffered);
  }
  const entries = publication.operations as LockedEntry[];
  ordered.operations = [...entries].sort((a, b) => compareEntries(kind, a, b)).map((entry) => orderEntry(kind, entry));
  return ordered as P;
}

function orderSource(source: LockedSource): LockedSource {
  const publications = [...(source.publications as AnyPublication[])]
    .sort((a, b) => publicationNumber(a.id) - publicationNumber(b.id))
    .map((publication) => orderPublication(source.kind, publication));
  return {
    name: source.name,
    kind: source.kind,
    document: source.document,
    documentDigest: source.documentDigest,
    publications,
  } as LockedSource;
}

function sortKeys<T extends Record<string, unknown>>(value: T): T {
  return Object.fromEntries(Object.entries(value).sort(([a], [b]) => compareText(a, b))) as T;
}

/** The lock in its canonical order (sources by name, publications by number, operations by path/method). */
export function normaliseLock(lock: Lockfile): Lockfile {
  return {
    lockVersion: lock.lockVersion,
    lastPublication: lock.lastPublication,
    sources: [...lock.sources].sort((a, b) => compareText(a.name, b.name)).map(orderSource),
  };
}

/** `\u200B`, `\U000E0049`: a YAML double-quoted escape of one code point. */
function yamlEscape(codePoint: number): string {
  const hex = codePoint.toString(16).toUpperCase();
  return codePoint <= 0xffff ? `\\u${hex.padStart(4, '0')}` : `\\U${hex.padStart(8, '0')}`;
}

/**
 * A string holding hidden characters (tool-text.ts) is written double-quoted with each of them escaped, so the
 * lock, and its diff in a pull request, shows `\U000E0049` where an upstream hid a tag character: the text is
 * kept (the tool is unsupported with a reason), never invisible. YAML reads the escapes back to the same string.
 */
const hiddenTextTag: ScalarTag = {
  default: true,
  tag: 'tag:yaml.org,2002:str',
  identify: (value: unknown): boolean => typeof value === 'string' && hiddenCharactersIn(value).length > 0,
  resolve: (text: string): string => text, // writing only: the lock is read by js-yaml
  stringify(item): string {
    const value = String(item.value);
    const hidden = new Set(hiddenCharactersIn(value));
    let out = '"';
    for (const character of value) {
      const codePoint = character.codePointAt(0)!;
      if (character === '"') out += '\\"';
      else if (character === '\\') out += '\\\\';
      else if (character === '\n') out += '\\n';
      else if (character === '\t') out += '\\t';
      else if (hidden.has(codePoint) || codePoint < 0x20) out += yamlEscape(codePoint);
      else out += character;
    }
    return `${out}"`;
  },
};

/** Deterministic YAML text: the same lock gives the same bytes on any machine. */
export function serialiseLock(lock: Lockfile): string {
  const body = stringify(normaliseLock(lock), {
    customTags: (tags) => [hiddenTextTag, ...tags],
    aliasDuplicateObjects: false,
    lineWidth: 0,
    minContentWidth: 0,
    indent: 2,
    indentSeq: true,
    singleQuote: false,
    sortMapEntries: false,
  });
  return LOCK_HEADER + body;
}

/**
 * js-yaml's YAML 1.2 int type, except that a decimal integer a double cannot hold exactly is read as a BigInt
 * (exact-integers.ts): the lock keeps integer bounds beyond 2^53 digit for digit. Same tag, so it replaces
 * the built-in type in the schema.
 */
const exactIntTag = defineScalarTag<number | bigint>('tag:yaml.org,2002:int', {
  implicit: true,
  implicitFirstChars: intCoreTag.implicitFirstChars,
  resolve: (source, isExplicit, tagName) => {
    const value = intCoreTag.resolve(source, isExplicit, tagName);
    if (value === NOT_RESOLVED || Number.isSafeInteger(value) || !/^[-+]?[0-9]+$/.test(source)) return value;
    return toExactInteger(BigInt(source));
  },
  identify: intCoreTag.identify,
  represent: intCoreTag.represent,
});
const EXACT_INT_SCHEMA = CORE_SCHEMA.withTags(exactIntTag);

/** Parses and validates lock text against the lockfile schema. `where` names the file in errors. */
export function parseLock(text: string, where = 'tools.lock'): Lockfile {
  let value: unknown;
  try {
    // js-yaml reads a 2,000-tool lock about ten times faster than `yaml` (which still writes it): the server
    // parses the lock at every start and reload. A lock never contains aliases: refuse them outright rather
    // than expand them; duplicate keys are refused too.
    // js-yaml refuses a collection once the depth reaches `maxDepth`: + 1 accepts exactly LOCK_MAX_DEPTH levels.
    // Only a lock with a 16-digit run can hold an integer beyond 2^53; the others keep the built-in int type.
    const exact = mayHoldUnsafeIntegers(text) ? { schema: EXACT_INT_SCHEMA } : {};
    value = load(text, { maxAliases: 0, maxDepth: LOCK_MAX_DEPTH + 1, ...exact });
  } catch (error) {
    throw new GatewayError('LOCK_UNREADABLE', `${where} is not valid YAML: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const validator = validateLockShape(value);
  if (validator.errors) {
    const problems = describeSchemaErrors(validator.errors).slice(0, 10);
    throw new GatewayError('LOCK_SCHEMA_INVALID', `${where} does not match the lockfile schema: ${problems.join('; ')}`, {
      details: { problems },
    });
  }
  return value as unknown as Lockfile;
}

/** Reads a lock; a missing file is an empty lock when `missingIsEmpty`, else LOCK_NOT_FOUND. */
export async function readLockFile(path: string, options: { missingIsEmpty?: boolean } = {}): Promise<Lockfile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      if (options.missingIsEmpty) return emptyLock();
      throw new GatewayError('LOCK_NOT_FOUND', `no lockfile at ${path}; run \`gateway import <source>\` first`);
    }
    throw new GatewayError('LOCK_UNREADABLE', `cannot read ${path}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return parseLock(text, path);
}

/**
 * A temporary file of writeFileAtomically older than this was left by a writer that died (SIGKILL, power
 * loss) between writing and renaming: no writer keeps one for a minute. Younger ones may belong to a writer
 * still at work in another process, so they are left alone.
 */
export const STALE_TEMPORARY_MS = 60_000;

/**
 * Removes `.<name>.<12 hex>.tmp` files beside `path` older than STALE_TEMPORARY_MS, so a killed import or publish
 * does not leave copies of the lock (or of the vault) behind for ever. Only that exact pattern, only regular
 * files; failures are ignored (cleaning is best effort, the write itself must not fail because of it).
 */
async function removeStaleTemporaries(path: string): Promise<void> {
  const folder = dirname(path);
  const name = basename(path);
  let entries: string[];
  try {
    entries = await readdir(folder);
  } catch {
    return;
  }
  const prefix = `.${name}.`;
  const now = Date.now();
  for (const entry of entries) {
    if (!entry.startsWith(prefix) || !/^[0-9a-f]{12}\.tmp$/.test(entry.slice(prefix.length))) continue;
    const candidate = join(folder, entry);
    try {
      const info = await lstat(candidate);
      if (info.isFile() && now - info.mtimeMs > STALE_TEMPORARY_MS) await unlink(candidate);
    } catch {
      // Gone already (another writer cleaned it), or not ours to remove.
    }
  }
}

/**
 * Writes text atomically: a temporary file beside the target, flushed to disk, then renamed over it.
 * A crash at any point leaves either the old file or the new one, never a partial one.
 */
export async function writeFileAtomically(path: string, text: string, mode = 0o644): Promise<void> {
  await removeStaleTemporaries(path);
  const temporary = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    await writeFile(temporary, text, { mode, flag: 'wx' });
    const handle = await open(temporary, 'r+');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, path);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
}

/** Validates, serialises and atomically writes a lock. */
export async function writeLockFile(path: string, lock: Lockfile): Promise<void> {
  // The reader's depth limit, checked first so a too-deep lock gets its own code rather than LOCK_UNREADABLE.
  if (nestingDepth(lock, LOCK_MAX_DEPTH) > LOCK_MAX_DEPTH) {
    throw new GatewayError(
      'LOCK_NESTING_TOO_DEEP',
      `the lock would nest more than ${LOCK_MAX_DEPTH} levels deep, more than tools.lock may hold; ` +
        'a schema of the document is nested too deeply. Nothing was written.',
    );
  }
  const text = serialiseLock(lock);
  parseLock(text, path); // never write a lock we could not read back
  await writeFileAtomically(path, text);
}

export function findSource(lock: Lockfile, name: string): LockedSource | undefined {
  return lock.sources.find((source) => source.name === name);
}

/** The publication type of a source kind (narrowing `source.kind` narrows this too). */
export type PublicationOf<S extends LockedSource> = S['publications'][number];

export function inUsePublication<S extends LockedSource>(source: S): PublicationOf<S> | undefined {
  return (source.publications as AnyPublication[]).find((publication) => publication.status === 'in use') as PublicationOf<S> | undefined;
}

export function proposedPublication<S extends LockedSource>(source: S): PublicationOf<S> | undefined {
  return (source.publications as AnyPublication[]).find((publication) => publication.status === 'proposed') as PublicationOf<S> | undefined;
}

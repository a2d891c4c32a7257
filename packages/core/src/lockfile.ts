import { readFile, rename, writeFile, unlink, open } from 'node:fs/promises';
import { dirname, basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { load } from 'js-yaml';
import { stringify } from 'yaml';
import lockfileSchema from './schemas/lockfile.schema.json' with { type: 'json' };
import { GatewayError } from './errors.js';
import { createAjv, describeSchemaErrors, type ValidateFunction } from './json-schema-validator.js';
import { LOCK_VERSION, type LockedOperation, type Lockfile, type LockedSource, type Publication } from './model.js';
import { compareText } from './compare-text.js';

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

export function emptyLock(): Lockfile {
  return { lockVersion: LOCK_VERSION, lastPublication: 0, sources: [] };
}

export function publicationNumber(id: string): number {
  const match = /^publication-(\d+)$/.exec(id);
  return match ? Number(match[1]) : Number.NaN;
}

/** Operations in lock order: by path, then method, then tool name. */
export function compareOperations(a: LockedOperation, b: LockedOperation): number {
  return compareText(a.path, b.path) || compareText(a.method, b.method) || compareText(a.tool, b.tool);
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

function orderPublication(publication: Publication): Publication {
  const ordered: Publication = {
    id: publication.id,
    status: publication.status,
    toolCount: publication.toolCount,
    documentDigest: publication.documentDigest,
    operations: [],
  };
  if (publication.publishedBy !== undefined) ordered.publishedBy = publication.publishedBy;
  if (publication.publishedAt !== undefined) ordered.publishedAt = publication.publishedAt;
  if (publication.keyId !== undefined) ordered.keyId = publication.keyId;
  if (publication.allowedStale !== undefined) ordered.allowedStale = publication.allowedStale;
  if (publication.signature !== undefined) ordered.signature = publication.signature;
  ordered.operations = [...publication.operations].sort(compareOperations).map(orderOperation);
  return ordered;
}

function orderSource(source: LockedSource): LockedSource {
  return {
    name: source.name,
    kind: source.kind,
    document: source.document,
    documentDigest: source.documentDigest,
    publications: [...source.publications]
      .sort((a, b) => publicationNumber(a.id) - publicationNumber(b.id))
      .map(orderPublication),
  };
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

/** Deterministic YAML text: the same lock gives the same bytes on any machine. */
export function serialiseLock(lock: Lockfile): string {
  const body = stringify(normaliseLock(lock), {
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

/** Parses and validates lock text against the lockfile schema. `where` names the file in errors. */
export function parseLock(text: string, where = 'tools.lock'): Lockfile {
  let value: unknown;
  try {
    // js-yaml reads a 2,000-tool lock about ten times faster than `yaml` (which still writes it): the server
    // parses the lock at every start and reload. A lock never contains aliases: refuse them outright rather
    // than expand them; duplicate keys are refused too.
    value = load(text, { maxAliases: 0 });
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
 * Writes text atomically: a temporary file beside the target, flushed to disk, then renamed over it.
 * A crash at any point leaves either the old file or the new one, never a partial one.
 */
export async function writeFileAtomically(path: string, text: string, mode = 0o644): Promise<void> {
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
  const text = serialiseLock(lock);
  parseLock(text, path); // never write a lock we could not read back
  await writeFileAtomically(path, text);
}

export function findSource(lock: Lockfile, name: string): LockedSource | undefined {
  return lock.sources.find((source) => source.name === name);
}

export function inUsePublication(source: LockedSource): Publication | undefined {
  return source.publications.find((publication) => publication.status === 'in use');
}

export function proposedPublication(source: LockedSource): Publication | undefined {
  return source.publications.find((publication) => publication.status === 'proposed');
}

/**
 * Lock verification: what CI runs (`gateway verify`) and what the server runs before it loads a lock.
 *
 * Every finding is collected into a report instead of thrown, so one run lists everything wrong. Only input
 * that cannot be read at all (a missing lock, a trust key file that is not a key) throws.
 */
import { sha256Digest } from './canonical.js';
import { resolveConfigPath, sourceLocation, type LoadedConfig } from './config/index.js';
import { GatewayError, isGatewayError } from './errors.js';
import { readPublicKeyFile } from './keys.js';
import { parseLock, publicationNumber } from './lockfile.js';
import type { LockedEntry, Lockfile, Publication, SourceKind } from './model.js';
import { describeEntry, entryFingerprint, fingerprintCoverage } from './source-kinds.js';
import { checkPublicationSignature, type SignedContentChange, type TrustedKey } from './signing.js';
import { readFile } from 'node:fs/promises';

export type VerificationProblemCode =
  | 'LOCK_SCHEMA_INVALID'
  | 'LOCK_SIGNATURE_MISSING'
  | 'LOCK_SIGNATURE_INVALID'
  | 'LOCK_KEY_UNTRUSTED'
  | 'LOCK_FINGERPRINT_MISMATCH'
  | 'LOCK_TOOL_COUNT_MISMATCH'
  | 'LOCK_OPERATION_NOT_SELECTED'
  | 'LOCK_OPERATION_UNSUPPORTED'
  | 'LOCK_TOOL_NAME_DUPLICATE'
  | 'LOCK_SOURCE_MISSING'
  | 'LOCK_SOURCE_ORPHAN'
  | 'LOCK_SOURCE_MISMATCH'
  | 'LOCK_SOURCE_DUPLICATE'
  | 'LOCK_PUBLICATION_CONFLICT'
  | 'LOCK_PUBLICATION_ID_INVALID';

export interface VerificationProblem {
  code: VerificationProblemCode;
  source?: string;
  publication?: string;
  tool?: string;
  message: string;
}

export interface VerifiedSourceSummary {
  name: string;
  /** The in-use publication, or null when the source has none. */
  inUse: string | null;
  toolCount: number;
  keyId: string | null;
  proposed: string | null;
}

export interface VerificationReport {
  ok: boolean;
  problems: VerificationProblem[];
  sources: VerifiedSourceSummary[];
}

/** Reads the public keys listed under `trust.keys` (paths relative to gateway.yaml). */
export async function loadTrustedKeys(loaded: LoadedConfig): Promise<TrustedKey[]> {
  const keys: TrustedKey[] = [];
  for (const listed of loaded.config.trust?.keys ?? []) {
    const path = resolveConfigPath(loaded, listed);
    const publicJwk = await readPublicKeyFile(path);
    if (!keys.some((key) => key.keyId === publicJwk.kid)) keys.push({ keyId: publicJwk.kid, publicJwk, path });
  }
  return keys;
}

/** Checks a parsed lock against the configuration and the trusted keys. */
export async function verifyLock(lock: Lockfile, loaded: LoadedConfig, trustedKeys: readonly TrustedKey[]): Promise<VerificationReport> {
  const problems: VerificationProblem[] = [];
  const sources: VerifiedSourceSummary[] = [];
  const configured = loaded.config.sources;
  const seenSources = new Set<string>();
  const seenIds = new Map<string, string>();
  /** tool name → the source whose in-use publication offers it, to keep names unique across sources. */
  const inUseTools = new Map<string, string>();

  for (const source of lock.sources) {
    if (seenSources.has(source.name)) {
      problems.push({
        code: 'LOCK_SOURCE_DUPLICATE',
        source: source.name,
        message: `source '${source.name}' appears more than once in the lock`,
      });
      continue;
    }
    seenSources.add(source.name);

    const wanted = configured[source.name];
    if (!wanted) {
      problems.push({
        code: 'LOCK_SOURCE_ORPHAN',
        source: source.name,
        message: `source '${source.name}' is in the lock but not in ${loaded.path}; remove it from the lock or add it to the configuration`,
      });
    } else if (sourceLocation(wanted) !== source.document || wanted.kind !== source.kind) {
      problems.push({
        code: 'LOCK_SOURCE_MISMATCH',
        source: source.name,
        message:
          `source '${source.name}' was imported from ${source.kind} ${JSON.stringify(source.document)} but the configuration names ` +
          `${wanted.kind} ${JSON.stringify(sourceLocation(wanted))}; run \`gateway import ${source.name}\` and publish again`,
      });
    }

    const publications = source.publications as Publication<LockedEntry>[];
    const inUse = publications.filter((publication) => publication.status === 'in use');
    const proposed = publications.filter((publication) => publication.status === 'proposed');
    for (const [status, list] of [
      ['in use', inUse],
      ['proposed', proposed],
    ] as const) {
      if (list.length > 1) {
        problems.push({
          code: 'LOCK_PUBLICATION_CONFLICT',
          source: source.name,
          message:
            `source '${source.name}' has ${list.length} publications ${status} ` +
            `(${list.map((publication) => publication.id).join(', ')}); at most one is allowed`,
        });
      }
    }

    for (const publication of publications) {
      const number = publicationNumber(publication.id);
      const earlier = seenIds.get(publication.id);
      if (earlier !== undefined) {
        problems.push({
          code: 'LOCK_PUBLICATION_ID_INVALID',
          source: source.name,
          publication: publication.id,
          message: `${publication.id} is used by both '${earlier}' and '${source.name}'; publication numbers are never reused`,
        });
      } else if (number > lock.lastPublication) {
        problems.push({
          code: 'LOCK_PUBLICATION_ID_INVALID',
          source: source.name,
          publication: publication.id,
          message: `${publication.id} is above lastPublication (${lock.lastPublication}); numbers come from the lock's counter`,
        });
      }
      seenIds.set(publication.id, source.name);
      await verifyPublication(source, publication, trustedKeys, problems);
    }

    for (const publication of inUse) {
      for (const operation of publication.operations) {
        const owner = inUseTools.get(operation.tool);
        if (owner !== undefined && owner !== source.name) {
          problems.push({
            code: 'LOCK_TOOL_NAME_DUPLICATE',
            source: source.name,
            publication: publication.id,
            tool: operation.tool,
            message:
              `tool name '${operation.tool}' is offered by both '${owner}' and '${source.name}'; tool names must be ` +
              `unique across sources`,
          });
        } else {
          inUseTools.set(operation.tool, source.name);
        }
      }
    }

    const current = inUse[0];
    sources.push({
      name: source.name,
      inUse: current?.id ?? null,
      toolCount: current?.toolCount ?? 0,
      keyId: current?.keyId ?? null,
      proposed: proposed[0]?.id ?? null,
    });
  }

  for (const name of Object.keys(configured).sort()) {
    if (!seenSources.has(name)) {
      problems.push({
        code: 'LOCK_SOURCE_MISSING',
        source: name,
        message: `source '${name}' is in ${loaded.path} but not in the lock; run \`gateway import ${name}\`, review and publish it`,
      });
    }
  }
  return { ok: problems.length === 0, problems, sources };
}

async function verifyPublication(
  source: Lockfile['sources'][number],
  publication: Publication<LockedEntry>,
  trustedKeys: readonly TrustedKey[],
  problems: VerificationProblem[],
): Promise<void> {
  const kind: SourceKind = source.kind;
  const describeOperation = (operation: LockedEntry): string => describeEntry(kind, operation);
  const where = { source: source.name, publication: publication.id };
  const label = `${source.name}/${publication.id}`;
  const isInUse = publication.status === 'in use';

  const seenTools = new Set<string>();
  for (const operation of publication.operations) {
    if (seenTools.has(operation.tool)) {
      problems.push({
        code: 'LOCK_TOOL_NAME_DUPLICATE',
        ...where,
        tool: operation.tool,
        message: `${label} lists tool '${operation.tool}' more than once`,
      });
    }
    seenTools.add(operation.tool);
    // The fingerprint is what sessions approve and drift compares; it must describe this exact request.
    const expected = entryFingerprint(kind, operation);
    if (operation.fingerprint !== expected) {
      problems.push({
        code: 'LOCK_FINGERPRINT_MISMATCH',
        ...where,
        tool: operation.tool,
        message: `${label}: operation ${describeOperation(operation)} does not match its fingerprint (${fingerprintCoverage(kind)})`,
      });
    }
    if (isInUse && !operation.selected) {
      problems.push({
        code: 'LOCK_OPERATION_NOT_SELECTED',
        ...where,
        tool: operation.tool,
        message: `${label} is in use but holds operation ${describeOperation(operation)}, which is not selected`,
      });
    }
    if (isInUse && operation.status !== 'supported') {
      problems.push({
        code: 'LOCK_OPERATION_UNSUPPORTED',
        ...where,
        tool: operation.tool,
        message: `${label} is in use but holds unsupported operation ${describeOperation(operation)}`,
      });
    }
  }

  for (const entry of publication.notOffered ?? []) {
    if (seenTools.has(entry.tool)) {
      problems.push({
        code: 'LOCK_TOOL_NAME_DUPLICATE',
        ...where,
        tool: entry.tool,
        message: `${label} lists '${entry.tool}' more than once (as a tool or among what it does not offer)`,
      });
    }
    seenTools.add(entry.tool);
  }
  if (!isInUse && publication.notOffered !== undefined) {
    // Only publishing records what is left out; in a proposal every operation is listed with its selection.
    problems.push({
      code: 'LOCK_SCHEMA_INVALID',
      ...where,
      message: `${label} is proposed but carries notOffered, which only an in-use publication records`,
    });
  }

  const selected = publication.operations.filter((operation) => operation.selected).length;
  if (publication.toolCount !== selected) {
    problems.push({
      code: 'LOCK_TOOL_COUNT_MISMATCH',
      ...where,
      message: `${label} records toolCount ${publication.toolCount} but selects ${selected} operation${selected === 1 ? '' : 's'}`,
    });
  }

  // Proposals are never signed; a proposal carrying a signature was an in-use publication whose status was
  // edited, and its signature (which covers the status) says so.
  if (isInUse || publication.signature !== undefined) {
    const check = await checkPublicationSignature(source, publication as Lockfile['sources'][number]['publications'][number], trustedKeys);
    if (!check.valid) {
      if (check.code !== 'LOCK_SIGNATURE_INVALID' || check.changes.length === 0) {
        problems.push({ code: check.code, ...where, message: check.message });
      } else {
        // One finding per thing that changed since signing, so the report points at what was edited.
        for (const change of check.changes) {
          problems.push({
            code: check.code,
            ...where,
            ...(change.tool === undefined ? {} : { tool: change.tool }),
            message: `${label}: the signature does not match: ${describeSignedChange(change)}`,
          });
        }
      }
    }
  }
}

function describeSignedChange(change: SignedContentChange): string {
  switch (change.kind) {
    case 'fields':
      return (
        'the publication fields (id, status, toolCount, documentDigest, publisher, time, keyId, ' +
        'allowedStale, the operations it does not offer and why) or its source changed since signing'
      );
    case 'operation-changed':
      return `operation ${change.tool} changed since signing`;
    case 'operation-missing':
      return `operation ${change.tool} was signed but is no longer in the publication (removed or renamed)`;
    case 'operation-unexpected':
      return `operation ${change.tool} is not one of the signed operations (added or renamed)`;
    default: {
      // A new kind of change must be described here before it compiles.
      const unreachable: never = change.kind;
      throw new GatewayError('INTERNAL_ERROR', `undescribed signed-content change ${JSON.stringify(unreachable)}`);
    }
  }
}

/** The lock's bytes, read once: whoever verifies them also digests and parses these same bytes. */
export async function readLockBytes(lockPath: string): Promise<Uint8Array> {
  try {
    return await readFile(lockPath);
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    throw new GatewayError(
      missing ? 'LOCK_NOT_FOUND' : 'LOCK_UNREADABLE',
      missing
        ? `no lockfile at ${lockPath}; run \`gateway import <source>\` first`
        : `cannot read ${lockPath}: ${(error as Error).message}`,
    );
  }
}

/** The verdict for a lock file: schema problems become findings; a missing or unreadable file throws. */
export async function verifyLockFile(
  lockPath: string,
  loaded: LoadedConfig,
  trustedKeys?: readonly TrustedKey[],
): Promise<{ lock: Lockfile | null; report: VerificationReport }> {
  return verifyLockBytes(await readLockBytes(lockPath), lockPath, loaded, trustedKeys);
}

/** The verdict for lock bytes already read (`lockPath` only names them in messages). */
export async function verifyLockBytes(
  bytes: Uint8Array,
  lockPath: string,
  loaded: LoadedConfig,
  trustedKeys?: readonly TrustedKey[],
): Promise<{ lock: Lockfile | null; report: VerificationReport }> {
  // Decoded as `readFile(path, 'utf8')` would (malformed sequences become U+FFFD), so the verdict is unchanged.
  const text = new TextDecoder('utf-8').decode(bytes);
  let lock: Lockfile;
  try {
    lock = parseLock(text, lockPath);
  } catch (error) {
    if (isGatewayError(error) && error.code === 'LOCK_SCHEMA_INVALID') {
      return { lock: null, report: { ok: false, problems: [{ code: 'LOCK_SCHEMA_INVALID', message: error.message }], sources: [] } };
    }
    throw error;
  }
  const report = await verifyLock(lock, loaded, trustedKeys ?? (await loadTrustedKeys(loaded)));
  return { lock, report };
}

/** One line per problem, for messages and the CLI's human report. */
export function describeProblem(problem: VerificationProblem): string {
  return `${problem.code}: ${problem.message}`;
}

/** A lock that verified, with the digest of the very bytes that were verified (to tell later rewrites apart). */
export interface VerifiedLock {
  lock: Lockfile;
  report: VerificationReport;
  digest: string;
}

/**
 * Reads and verifies a lock; throws LOCK_VERIFICATION_FAILED (details.problems) unless it verifies.
 * The server calls this before loading a lock, so it never serves a publication CI would have refused.
 */
export async function loadVerifiedLock(lockPath: string, loaded: LoadedConfig): Promise<VerifiedLock> {
  return verifiedLockFrom(await readLockBytes(lockPath), lockPath, loaded);
}

/** The same for bytes already read: parsed, verified and digested from those bytes alone. */
export async function verifiedLockFrom(bytes: Uint8Array, lockPath: string, loaded: LoadedConfig): Promise<VerifiedLock> {
  const { lock, report } = await verifyLockBytes(bytes, lockPath, loaded);
  if (!lock || !report.ok) {
    const shown = report.problems.slice(0, 3).map(describeProblem).join('; ');
    const more = report.problems.length > 3 ? ` (and ${report.problems.length - 3} more; run \`gateway verify\`)` : '';
    throw new GatewayError('LOCK_VERIFICATION_FAILED', `${lockPath} failed verification: ${shown}${more}`, {
      details: { problems: report.problems },
    });
  }
  return { lock, report, digest: sha256Digest(bytes) };
}

/** The same as verifyLock, under the name the server contract uses. */
export const verify = verifyLock;

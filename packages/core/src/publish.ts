/**
 * Publishing: a source's reviewed proposal becomes its signed, frozen, in-use publication.
 * A pure function over the lock; the caller reads the key, imports the live description and writes the file.
 */
import { sourceConfig, sourceLocation, type LoadedConfig } from './config/index.js';
import { GatewayError, type ErrorCode } from './errors.js';
import type { PrivateKeyJwk } from './keys.js';
import { publicJwkOf } from './keys.js';
import { findSource, inUsePublication, publicationNumber } from './lockfile.js';
import type { AnyPublication, LockedEntry, Lockfile, McpTool, Operation, Publication } from './model.js';
import { describeEntry, entryFingerprint, notOfferedEntry } from './source-kinds.js';
import { requireProposal } from './proposal.js';
import { signAndCheckPublication, type TrustedKey } from './signing.js';

/** The live description, imported in memory (the shape `importOpenApi` returns). */
export interface LiveDescription {
  documentDigest: string;
  operations: readonly Operation[] | readonly McpTool[];
}

/** One way the proposal no longer matches the live description. */
export interface StaleFinding {
  kind: 'document-changed' | 'document-moved' | 'operation-changed' | 'operation-removed';
  tool?: string;
  message: string;
}

export interface PublishRequest {
  lock: Lockfile;
  config: LoadedConfig;
  source: string;
  privateJwk: PrivateKeyJwk;
  trustedKeys: readonly TrustedKey[];
  /** Who publishes (recorded as `publishedBy`). */
  publisher: string;
  /** The live description (or how to import it, called only once the cheap checks passed). */
  live: LiveDescription | (() => Promise<LiveDescription>);
  /** Publish even when the proposal is stale; recorded as `allowedStale: true`. */
  allowStale?: boolean;
  now?: Date;
}

export interface PublishResult {
  lock: Lockfile;
  publication: AnyPublication;
  /** The in-use publication this one replaced (removed from the lock; git keeps it), or null. */
  retired: string | null;
  /** What made the proposal stale (empty unless published with allowStale). */
  stale: StaleFinding[];
}

/** How the proposal differs from the live description: the document digest and every selected operation. */
export function staleFindings(
  proposal: Publication<LockedEntry> | Publication,
  live: LiveDescription,
  locations: { lock: string; config: string },
): StaleFinding[] {
  const findings: StaleFinding[] = [];
  if (locations.lock !== locations.config) {
    findings.push({
      kind: 'document-moved',
      message: `the proposal was imported from ${locations.lock} but the configuration now names ${locations.config}`,
    });
  }
  if (proposal.documentDigest !== live.documentDigest) {
    findings.push({
      kind: 'document-changed',
      message: `the live document's digest is ${live.documentDigest}, the proposal was made from ${proposal.documentDigest}`,
    });
  }
  const liveByTool = new Map((live.operations as readonly (Operation | McpTool)[]).map((operation) => [operation.tool, operation]));
  for (const operation of (proposal.operations as LockedEntry[]).filter((candidate) => candidate.selected)) {
    const current = liveByTool.get(operation.tool);
    if (!current) {
      findings.push({ kind: 'operation-removed', tool: operation.tool, message: `${operation.tool} is no longer in the live document` });
    } else if (current.fingerprint !== operation.fingerprint) {
      findings.push({
        kind: 'operation-changed',
        tool: operation.tool,
        message: `${operation.tool} changed in the live document (fingerprint ${current.fingerprint})`,
      });
    }
  }
  return findings;
}

function refused(code: ErrorCode, message: string, details: Record<string, unknown>): GatewayError {
  return new GatewayError(code, message, { details });
}

/** Turns a source's proposal into its signed in-use publication; refuses anything CI would not accept. */
export async function publishProposal(request: PublishRequest): Promise<PublishResult> {
  const { config, source: sourceName } = request;
  const configured = sourceConfig(config, sourceName);
  const proposal = requireProposal(request.lock, sourceName) as Publication<LockedEntry>;
  const lockedSource = findSource(request.lock, sourceName)!;
  const kind = lockedSource.kind;

  const selected = proposal.operations.filter((operation) => operation.selected);
  if (selected.length === 0) {
    throw refused(
      'PUBLISH_NOTHING_SELECTED',
      `${proposal.id} of '${sourceName}' selects no operation; choose tools with \`gateway review ${sourceName}\` first`,
      { source: sourceName, publication: proposal.id },
    );
  }
  const unsupported = selected.find((operation) => operation.status !== 'supported');
  if (unsupported) {
    throw refused(
      'PUBLISH_UNSUPPORTED_SELECTED',
      `${proposal.id} selects ${describeEntry(kind, unsupported)}, which is unsupported: ` +
        `${unsupported.reason?.message ?? 'no reason recorded'}; deselect it with \`gateway review ${sourceName}\``,
      { source: sourceName, tool: unsupported.tool },
    );
  }
  // A hand-edited proposal must not be signed: the signature would bless a request nobody imported.
  const edited = selected.find((operation) => operation.fingerprint !== entryFingerprint(kind, operation));
  if (edited) {
    throw new GatewayError(
      'LOCK_FINGERPRINT_MISMATCH',
      `${proposal.id}: operation ${describeEntry(kind, edited)} does not match its fingerprint; ` +
        `run \`gateway import ${sourceName}\` again instead of editing the lock`,
      { details: { source: sourceName, publication: proposal.id, tool: edited.tool } },
    );
  }

  const publicJwk = await publicJwkOf(request.privateJwk);
  if (!request.trustedKeys.some((key) => key.keyId === publicJwk.kid)) {
    throw refused(
      'KEY_NOT_TRUSTED',
      `the signing key ${publicJwk.kid} is not listed under trust.keys in ${config.path}; add its *.pub.jwk file there ` +
        '(in a reviewed change) or sign with a trusted key',
      { keyId: publicJwk.kid },
    );
  }

  // Tool names are the MCP tool names clients see: two sources must never offer the same one.
  for (const other of request.lock.sources) {
    if (other.name === sourceName) continue;
    const otherInUse = inUsePublication(other) as Publication<LockedEntry> | undefined;
    const clash = otherInUse?.operations.find((operation) => selected.some((mine) => mine.tool === operation.tool));
    if (clash) {
      throw refused(
        'PUBLISH_TOOL_NAME_CONFLICT',
        `tool name '${clash.tool}' is already offered by source '${other.name}' (${otherInUse!.id}); deselect it or rename the operation`,
        { source: sourceName, tool: clash.tool, otherSource: other.name },
      );
    }
  }

  const live = typeof request.live === 'function' ? await request.live() : request.live;
  const stale = staleFindings(proposal, live, { lock: lockedSource.document, config: sourceLocation(configured) });
  if (stale.length > 0 && !request.allowStale) {
    throw refused(
      'PUBLISH_STALE',
      `${proposal.id} of '${sourceName}' no longer matches the live description: ${stale.map((finding) => finding.message).join('; ')}. ` +
        `Run \`gateway import ${sourceName}\` and review again, or pass --allow-stale to publish it anyway (recorded in the lock)`,
      { source: sourceName, publication: proposal.id, findings: stale },
    );
  }

  const next = structuredClone(request.lock);
  const source = findSource(next, sourceName)!;
  const previous = inUsePublication(source) as Publication<LockedEntry> | undefined;
  // Numbers only grow: the proposal's number was allocated at import, but never publish below the current one.
  let number = publicationNumber(proposal.id);
  if (previous && number <= publicationNumber(previous.id)) number = next.lastPublication + 1;
  next.lastPublication = Math.max(next.lastPublication, number);

  const operations: LockedEntry[] = structuredClone(selected).map((operation) => ({ ...operation, selected: true }));
  // Everything of the description that is not a tool stays visible, signed, with why (docs/lockfile.md).
  const notOffered = proposal.operations.filter((operation) => !operation.selected).map((operation) => notOfferedEntry(kind, operation));
  const unsigned: Publication<LockedEntry> = {
    id: `publication-${number}`,
    status: 'in use',
    toolCount: operations.length,
    documentDigest: proposal.documentDigest,
    publishedBy: request.publisher,
    publishedAt: (request.now ?? new Date()).toISOString(),
    keyId: publicJwk.kid,
    ...(stale.length > 0 ? { allowedStale: true } : {}),
    notOffered,
    operations,
  };
  const publication = await signAndCheckPublication(source, unsigned as AnyPublication, request.privateJwk, publicJwk);
  (source as { publications: Publication<LockedEntry>[] }).publications = [publication];
  return { lock: next, publication, retired: previous?.id ?? null, stale };
}

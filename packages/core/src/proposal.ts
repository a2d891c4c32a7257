/**
 * Proposals: what `gateway import` and `gateway review` do to the lock, as pure functions over the Lockfile
 * model. Import writes (or replaces) a source's proposed publication and carries the reviewed selection
 * forward; review changes which operations of that proposal are selected. Neither touches the file system.
 */
import { GatewayError } from './errors.js';
import { findSource, inUsePublication, proposedPublication } from './lockfile.js';
import {
  OPERATORS_APPROVER,
  type LockedEntry,
  type LockedSource,
  type Lockfile,
  type McpTool,
  type Operation,
  type Publication,
  type ReviewChoices,
  type SourceKind,
} from './model.js';
import { describeEntry } from './source-kinds.js';

/** Selection works the same for every kind: on the fields every entry has. */
type AnyEntry = Operation | McpTool;
type GenericPublication = Publication<LockedEntry>;
import { compareText } from './compare-text.js';

/** What an import produced: the part of `ImportedDocument` (openapi/) a proposal needs. */
export type ImportedOperations =
  | {
      kind?: 'openapi';
      documentDigest: string;
      /** Sorted, tool names unique within the source. */
      operations: Operation[];
    }
  | { kind: 'mcp'; documentDigest: string; operations: McpTool[] };

/** What changed versus the in-use publication, by tool name. */
export interface VersusInUse {
  /** The in-use publication compared with, or null when the source has none yet (then everything is added). */
  publication: string | null;
  /** Tool names in the new proposal that the in-use publication neither offers nor records, unchanged, as not offered. */
  added: string[];
  /** Tool names in both whose fingerprint differs (the request changed). */
  changed: string[];
  /** Tool names the in-use publication offers that the document no longer has. */
  removed: string[];
}

export interface ImportSummary {
  source: string;
  /** The id of the proposed publication written. */
  publication: string;
  documentDigest: string;
  operations: number;
  supported: number;
  unsupported: number;
  /** Unsupported operations per reason code (keys sorted). */
  unsupportedByReason: Record<string, number>;
  /** Operations selected after carrying the previous selection forward (the proposal's tool count). */
  selected: number;
  versusInUse: VersusInUse;
}

export interface ImportResult {
  lock: Lockfile;
  summary: ImportSummary;
}

/**
 * Writes or replaces the proposed publication of `sourceName` with the imported operations.
 *
 * - The proposal keeps its id when one exists, so importing the same document twice gives a byte-identical
 *   lock; otherwise it takes `publication-<lastPublication + 1>` (numbering is global and never reused).
 * - Selection is carried forward by tool name and fingerprint, never by name alone, so an operation whose
 *   request changed is never silently re-approved. When the previous proposal holds the operation with the
 *   same fingerprint, its choice (selected or not) wins: a person's deliberate deselection survives a
 *   re-import. Otherwise the operation is selected when the in-use publication offers it unchanged (an in-use
 *   publication holds only selected operations). Everything else starts unselected; unsupported operations
 *   are never selected.
 */
export function applyImport(lock: Lockfile, sourceName: string, documentLocation: string, imported: ImportedOperations): ImportResult {
  const next = structuredClone(lock);
  const kind: SourceKind = imported.kind ?? 'openapi';
  let source = findSource(next, sourceName);
  if (source && source.kind !== kind) {
    // The configuration changed the source's kind: nothing of the old kind can carry forward.
    next.sources = next.sources.filter((candidate) => candidate !== source);
    source = undefined;
  }
  if (!source) {
    source = {
      name: sourceName,
      kind,
      document: documentLocation,
      documentDigest: imported.documentDigest,
      publications: [],
    } as LockedSource;
    next.sources.push(source);
  }
  source.document = documentLocation;
  source.documentDigest = imported.documentDigest;

  const inUse = inUsePublication(source) as GenericPublication | undefined;
  const previous = proposedPublication(source) as GenericPublication | undefined;
  const inUseByTool = operationsByTool(inUse);
  const previousByTool = operationsByTool(previous);

  const operations: LockedEntry[] = (imported.operations as AnyEntry[]).map((operation) => {
    const copy = structuredClone(operation);
    return {
      ...copy,
      selected: operation.status === 'supported' && isCarriedForward(operation, previousByTool, inUseByTool),
      ...reviewChoicesCarried(operation.tool, previousByTool, inUseByTool),
    };
  });

  let id: string;
  if (previous) {
    id = previous.id;
  } else {
    next.lastPublication += 1;
    id = `publication-${next.lastPublication}`;
  }
  const proposal: GenericPublication = {
    id,
    status: 'proposed',
    toolCount: operations.filter((operation) => operation.selected).length,
    documentDigest: imported.documentDigest,
    operations,
  };
  const kept = (source.publications as GenericPublication[]).filter((publication) => publication.status !== 'proposed');
  (source as { publications: GenericPublication[] }).publications = [...kept, proposal];

  return { lock: next, summary: summariseImport(sourceName, proposal, inUse) };
}

function isCarriedForward(operation: AnyEntry, previousByTool: Map<string, LockedEntry>, inUseByTool: Map<string, LockedEntry>): boolean {
  const previous = previousByTool.get(operation.tool);
  if (previous && previous.fingerprint === operation.fingerprint) return previous.selected;
  const published = inUseByTool.get(operation.tool);
  return published?.selected === true && published.fingerprint === operation.fingerprint;
}

/**
 * The review choices (docs/approvals.md) carried forward by tool name alone, unlike the selection: a choice
 * that holds a call for a person's approval must never fall away because the request changed. The previous
 * proposal's choice wins (review changed it there), else the in-use publication's.
 */
function reviewChoicesCarried(
  tool: string,
  previousByTool: Map<string, LockedEntry>,
  inUseByTool: Map<string, LockedEntry>,
): ReviewChoices {
  const from = previousByTool.get(tool) ?? inUseByTool.get(tool);
  if (from?.approval === undefined) return {};
  return { approval: from.approval, ...(from.approvers ? { approvers: [...from.approvers] } : {}) };
}

function operationsByTool(publication: GenericPublication | undefined): Map<string, LockedEntry> {
  return new Map((publication?.operations ?? []).map((operation) => [operation.tool, operation]));
}

function summariseImport(sourceName: string, proposal: GenericPublication, inUse: GenericPublication | undefined): ImportSummary {
  const unsupportedByReason: Record<string, number> = {};
  let supported = 0;
  for (const operation of proposal.operations) {
    if (operation.status === 'supported') {
      supported += 1;
    } else {
      const code = operation.reason?.code ?? 'UNKNOWN';
      unsupportedByReason[code] = (unsupportedByReason[code] ?? 0) + 1;
    }
  }
  return {
    source: sourceName,
    publication: proposal.id,
    documentDigest: proposal.documentDigest,
    operations: proposal.operations.length,
    supported,
    unsupported: proposal.operations.length - supported,
    unsupportedByReason: Object.fromEntries(Object.entries(unsupportedByReason).sort(([a], [b]) => compareText(a, b))),
    selected: proposal.toolCount,
    versusInUse: compareWithInUse(proposal, inUse),
  };
}

/** Added, changed and removed tool names of a proposal versus the in-use publication (sorted). */
export function compareWithInUse(
  proposal: Publication<LockedEntry> | Publication,
  inUse: Publication<LockedEntry> | Publication | undefined,
): VersusInUse {
  const published = operationsByTool(inUse as GenericPublication | undefined);
  const proposed = operationsByTool(proposal as GenericPublication);
  // What the in-use publication records as left out, unchanged since, is not new.
  const leftOut = new Map((inUse?.notOffered ?? []).map((entry) => [entry.tool, entry.fingerprint]));
  const added: string[] = [];
  const changed: string[] = [];
  for (const [tool, operation] of proposed) {
    const before = published.get(tool);
    if (!before) {
      if (leftOut.get(tool) !== operation.fingerprint) added.push(tool);
    } else if (before.fingerprint !== operation.fingerprint) changed.push(tool);
  }
  const removed = [...published.keys()].filter((tool) => !proposed.has(tool));
  return {
    publication: inUse?.id ?? null,
    added: added.sort(compareText),
    changed: changed.sort(compareText),
    removed: removed.sort(compareText),
  };
}

export interface SelectionRequest {
  /** Tool names or globs (`*` any run of characters, `?` one character) to select. */
  select?: string[];
  /** Tool names or globs to deselect (applied after `select`). */
  deselect?: string[];
  /** Select every supported operation first. */
  allSupported?: boolean;
  /** Tool names or globs whose every call waits for a person's approval (docs/approvals.md). */
  eachCall?: string[];
  /** Who may approve the calls of the `eachCall` tools: person names and `@operators`; absent: the session's person. */
  approvers?: string[];
  /** Tool names or globs that no longer wait for approval (applied after `eachCall`). */
  anyCall?: string[];
}

/**
 * Changes which operations of a source's proposal are selected; returns the new lock (tool count updated).
 *
 * Order: `allSupported`, then `select`, then `deselect`. Every pattern must match at least one tool name
 * (a typo must not pass silently in a script). An unsupported operation can never be selected: naming one
 * exactly fails with its reason; a glob selects the supported operations it matches and fails only when
 * everything it matches is unsupported.
 */
export function applySelection(lock: Lockfile, sourceName: string, request: SelectionRequest): Lockfile {
  const next = structuredClone(lock);
  const proposal = requireProposal(next, sourceName) as GenericPublication;
  const kind = findSource(next, sourceName)!.kind;
  const operations = proposal.operations;

  if (request.allSupported) {
    for (const operation of operations) if (operation.status === 'supported') operation.selected = true;
  }
  for (const pattern of request.select ?? []) {
    const matches = matchingOperations(operations, pattern, sourceName);
    const supported = matches.filter((operation) => operation.status === 'supported');
    if (supported.length === 0 || !isGlob(pattern)) {
      const refused = matches.find((operation) => operation.status !== 'supported');
      if (refused) throw unsupportedSelection(kind, sourceName, refused);
    }
    for (const operation of supported) operation.selected = true;
  }
  for (const pattern of request.deselect ?? []) {
    for (const operation of matchingOperations(operations, pattern, sourceName)) operation.selected = false;
  }
  applyApprovalChoices(operations, sourceName, request);
  proposal.toolCount = operations.filter((operation) => operation.selected).length;
  return next;
}

const PERSON_NAME = /^[a-zA-Z0-9][a-zA-Z0-9._@-]{0,63}$/;

/** `eachCall` (with its `approvers`), then `anyCall`: the review choices of docs/approvals.md. */
function applyApprovalChoices(operations: LockedEntry[], sourceName: string, request: SelectionRequest): void {
  const approvers = request.approvers;
  if (approvers !== undefined) {
    if ((request.eachCall ?? []).length === 0) {
      throw new GatewayError('APPROVER_INVALID', '--approvers names who approves the calls of the --each-call tools: give --each-call too');
    }
    for (const approver of approvers) {
      if (approver !== OPERATORS_APPROVER && !PERSON_NAME.test(approver)) {
        throw new GatewayError('APPROVER_INVALID', `'${approver}' is neither a person name nor ${OPERATORS_APPROVER}`, {
          details: { approver },
        });
      }
    }
  }
  const unique = approvers ? [...new Set(approvers)].sort(compareText) : undefined;
  for (const pattern of request.eachCall ?? []) {
    for (const operation of matchingOperations(operations, pattern, sourceName)) {
      operation.approval = 'each-call';
      if (unique) operation.approvers = unique;
      else delete operation.approvers;
    }
  }
  for (const pattern of request.anyCall ?? []) {
    for (const operation of matchingOperations(operations, pattern, sourceName)) {
      delete operation.approval;
      delete operation.approvers;
    }
  }
}

/** Sets the selection of a proposal to exactly `tools` (the interactive checklist's answer). */
export function setSelection(lock: Lockfile, sourceName: string, tools: readonly string[]): Lockfile {
  const next = structuredClone(lock);
  const proposal = requireProposal(next, sourceName) as GenericPublication;
  const kind = findSource(next, sourceName)!.kind;
  const wanted = new Set(tools);
  const known = new Set(proposal.operations.map((operation) => operation.tool));
  for (const tool of wanted) {
    if (!known.has(tool)) {
      throw new GatewayError('SELECTION_NO_MATCH', `source '${sourceName}' has no operation with tool name '${tool}'`, {
        details: { source: sourceName, pattern: tool },
      });
    }
  }
  for (const operation of proposal.operations) {
    const isWanted = wanted.has(operation.tool);
    if (isWanted && operation.status !== 'supported') throw unsupportedSelection(kind, sourceName, operation);
    operation.selected = isWanted;
  }
  proposal.toolCount = proposal.operations.filter((operation) => operation.selected).length;
  return next;
}

export interface SelectionChange {
  selected: string[];
  deselected: string[];
  /** Tools whose review choices changed (sorted), with what they are now. */
  approvals: Array<{ tool: string; approval: 'each-call' | null; approvers: string[] | null }>;
  toolCount: number;
}

/** Which tools a selection change turned on and off (sorted), for printing. */
export function describeSelectionChange(before: Lockfile, after: Lockfile, sourceName: string): SelectionChange {
  const previous = operationsByTool(requireProposal(before, sourceName) as GenericPublication);
  const proposal = requireProposal(after, sourceName) as GenericPublication;
  const selected: string[] = [];
  const deselected: string[] = [];
  const approvals: SelectionChange['approvals'] = [];
  for (const operation of proposal.operations) {
    const before = previous.get(operation.tool);
    const wasSelected = before?.selected ?? false;
    if (operation.selected && !wasSelected) selected.push(operation.tool);
    if (!operation.selected && wasSelected) deselected.push(operation.tool);
    const choices = (entry: LockedEntry | undefined) => JSON.stringify([entry?.approval ?? null, entry?.approvers ?? null]);
    if (choices(before) !== choices(operation)) {
      approvals.push({ tool: operation.tool, approval: operation.approval ?? null, approvers: operation.approvers ?? null });
    }
  }
  approvals.sort((left, right) => compareText(left.tool, right.tool));
  return { selected: selected.sort(compareText), deselected: deselected.sort(compareText), approvals, toolCount: proposal.toolCount };
}

/** The proposed publication of a source, or PROPOSAL_NOT_FOUND. */
export function requireProposal(lock: Lockfile, sourceName: string): LockedSource['publications'][number] {
  const source: LockedSource | undefined = findSource(lock, sourceName);
  const proposal = source ? proposedPublication(source) : undefined;
  if (!proposal) {
    throw new GatewayError(
      'PROPOSAL_NOT_FOUND',
      `source '${sourceName}' has no proposed publication in the lock; run \`gateway import ${sourceName}\` first`,
      { details: { source: sourceName } },
    );
  }
  return proposal;
}

function matchingOperations(operations: LockedEntry[], pattern: string, sourceName: string): LockedEntry[] {
  const expression = globExpression(pattern);
  const matches = operations.filter((operation) => expression.test(operation.tool));
  if (matches.length === 0) {
    throw new GatewayError('SELECTION_NO_MATCH', `no tool name of source '${sourceName}' matches '${pattern}'`, {
      details: { source: sourceName, pattern },
    });
  }
  return matches;
}

function unsupportedSelection(kind: SourceKind, sourceName: string, operation: LockedEntry): GatewayError {
  const code = operation.reason?.code ?? 'UNSUPPORTED';
  const sentence = operation.reason?.message ?? 'the operation is not supported';
  return new GatewayError('SELECTION_UNSUPPORTED', `cannot select ${describeEntry(kind, operation)}: ${code}: ${sentence}`, {
    details: { source: sourceName, tool: operation.tool, reason: operation.reason },
  });
}

export function isGlob(pattern: string): boolean {
  return /[*?]/.test(pattern);
}

/** `*` matches any run of characters, `?` exactly one; everything else is literal; the whole name must match. */
export function globExpression(pattern: string): RegExp {
  let source = '';
  for (const character of pattern) {
    if (character === '*') source += '.*';
    else if (character === '?') source += '.';
    else source += character.replace(/[\\^$.|+()[\]{}]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, 'u');
}

/** The proposal a live description makes, as `gateway import` would write it into this lock (nothing is written). */
export interface DraftProposal {
  /** `publication-<n>`: the number import gives it (the existing proposal's, else `lastPublication + 1`). */
  id: string;
  toolCount: number;
  documentDigest: string;
  versusInUse: VersusInUse;
}

/**
 * What `gateway import <source>` would write for this live description into `lock`, computed the same way
 * (applyImport): the server records it when it detects a change, so the number and content it shows are the
 * ones the import then writes.
 */
export function draftProposal(lock: Lockfile, sourceName: string, documentLocation: string, imported: ImportedOperations): DraftProposal {
  const { summary } = applyImport(lock, sourceName, documentLocation, imported);
  return { id: summary.publication, toolCount: summary.selected, documentDigest: summary.documentDigest, versusInUse: summary.versusInUse };
}

import type { McpTool, Operation } from '@gateway/core';
import { writeTransaction, type SqliteDatabase } from '../../store/sqlite/database.js';
import type { DriftProposal, DriftState, DriftStatus, DriftStore, NewDriftProposal } from '../ports.js';

interface StateRow {
  source: string;
  document: string;
  etag: string | null;
  last_modified: string | null;
  document_digest: string | null;
  checked_at: string | null;
  status: DriftStatus;
  error_code: string | null;
  error_message: string | null;
  publication_id: string | null;
  blocked_json: string;
}

interface ProposalRow {
  source: string;
  document_digest: string;
  publication_id: string | null;
  detected_at: string;
  last_seen_at: string;
  added_json: string;
  changed_json: string;
  removed_json: string;
  proposal_id: string | null;
  tool_count: number | null;
  summary_json: string;
}

/** The drift store port (../ports.ts) over tables `drift_state` and `drift_proposals` (from `driftMigrations`). */
export class SqliteDriftStore implements DriftStore {
  private readonly upsertState;
  private readonly selectState;
  private readonly insertProposal;
  private readonly touchProposal;
  private readonly selectLatestProposal;
  private readonly selectProposalOperations;
  private readonly recordAtomically;

  constructor(database: SqliteDatabase) {
    this.upsertState = database.prepare(`
      INSERT INTO drift_state (source, document, etag, last_modified, document_digest, checked_at, status,
        error_code, error_message, publication_id, blocked_json)
      VALUES (@source, @document, @etag, @last_modified, @document_digest, @checked_at, @status,
        @error_code, @error_message, @publication_id, @blocked_json)
      ON CONFLICT (source) DO UPDATE SET document = excluded.document, etag = excluded.etag,
        last_modified = excluded.last_modified, document_digest = excluded.document_digest,
        checked_at = excluded.checked_at, status = excluded.status, error_code = excluded.error_code,
        error_message = excluded.error_message, publication_id = excluded.publication_id,
        blocked_json = excluded.blocked_json`);
    this.selectState = database.prepare('SELECT * FROM drift_state WHERE source = ?');
    this.insertProposal = database.prepare(`
      INSERT INTO drift_proposals (source, document_digest, publication_id, detected_at, last_seen_at,
        operations_json, added_json, changed_json, removed_json, proposal_id, tool_count, summary_json)
      VALUES (@source, @document_digest, @publication_id, @detected_at, @detected_at, @operations_json,
        @added_json, @changed_json, @removed_json, @proposal_id, @tool_count, @summary_json)
      ON CONFLICT (source, document_digest) DO NOTHING`);
    this.touchProposal = database.prepare(
      'UPDATE drift_proposals SET last_seen_at = @detected_at, publication_id = @publication_id, added_json = @added_json, ' +
        'changed_json = @changed_json, removed_json = @removed_json, proposal_id = @proposal_id, tool_count = @tool_count, ' +
        'summary_json = @summary_json WHERE source = @source AND document_digest = @document_digest',
    );
    this.selectLatestProposal = database.prepare('SELECT * FROM drift_proposals WHERE source = ? AND document_digest = ?');
    this.selectProposalOperations = database.prepare(
      'SELECT operations_json FROM drift_proposals WHERE source = ? AND document_digest = ?',
    );
    this.recordAtomically = writeTransaction(
      database,
      (proposal: NewDriftProposal, operations: readonly Operation[] | readonly McpTool[]) => this.recordRow(proposal, operations),
    );
  }

  async saveState(state: DriftState): Promise<void> {
    this.upsertState.run({
      source: state.source,
      document: state.document,
      etag: state.etag,
      last_modified: state.lastModified,
      document_digest: state.documentDigest,
      checked_at: state.checkedAt,
      status: state.status,
      error_code: state.error?.code ?? null,
      error_message: state.error?.message ?? null,
      publication_id: state.publicationId,
      blocked_json: JSON.stringify(state.blocked),
    });
  }

  async loadState(source: string): Promise<DriftState | undefined> {
    const row = this.selectState.get(source) as StateRow | undefined;
    if (!row) return undefined;
    return {
      source: row.source,
      document: row.document,
      etag: row.etag,
      lastModified: row.last_modified,
      documentDigest: row.document_digest,
      checkedAt: row.checked_at,
      status: row.status,
      error: row.error_code ? { code: row.error_code, message: row.error_message ?? '' } : null,
      publicationId: row.publication_id,
      blocked: JSON.parse(row.blocked_json) as DriftState['blocked'],
    };
  }

  async recordProposal(proposal: NewDriftProposal, operations: readonly Operation[] | readonly McpTool[]): Promise<DriftProposal> {
    return this.recordAtomically(proposal, operations);
  }

  private recordRow(proposal: NewDriftProposal, operations: readonly Operation[] | readonly McpTool[]): DriftProposal {
    const row = {
      source: proposal.source,
      document_digest: proposal.digest,
      publication_id: proposal.publicationId,
      detected_at: proposal.detectedAt,
      added_json: JSON.stringify(proposal.added),
      changed_json: JSON.stringify(proposal.changed),
      removed_json: JSON.stringify(proposal.removed),
      proposal_id: proposal.proposalId,
      tool_count: proposal.toolCount,
      summary_json: JSON.stringify(proposal.summary),
    };
    const result = this.insertProposal.run({ ...row, operations_json: JSON.stringify(operations) });
    // A later sighting refreshes the comparison and the number (a reload of the lock may have moved it).
    if (result.changes === 0) this.touchProposal.run(row);
    return this.proposalRow(proposal.source, proposal.digest)!;
  }

  async proposal(source: string, digest: string): Promise<DriftProposal | undefined> {
    return this.proposalRow(source, digest);
  }

  private proposalRow(source: string, digest: string): DriftProposal | undefined {
    const row = this.selectLatestProposal.get(source, digest) as ProposalRow | undefined;
    if (!row) return undefined;
    return {
      source: row.source,
      digest: row.document_digest,
      publicationId: row.publication_id,
      detectedAt: row.detected_at,
      lastSeenAt: row.last_seen_at,
      added: JSON.parse(row.added_json) as string[],
      changed: JSON.parse(row.changed_json) as string[],
      removed: JSON.parse(row.removed_json) as string[],
      proposalId: row.proposal_id,
      toolCount: row.tool_count,
      summary: JSON.parse(row.summary_json) as string[],
    };
  }

  /** The normalised operations of a recorded proposal. */
  async proposalOperations(source: string, digest: string): Promise<Operation[] | McpTool[] | undefined> {
    const row = this.selectProposalOperations.get(source, digest) as { operations_json: string } | undefined;
    return row ? (JSON.parse(row.operations_json) as Operation[] | McpTool[]) : undefined;
  }
}

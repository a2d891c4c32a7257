import type { McpTool, Operation } from '@gateway/core';
import type { PostgresPool } from '../../store/postgres/database.js';
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

function proposalOf(row: ProposalRow): DriftProposal {
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

const UPSERT_STATE = `
  INSERT INTO drift_state (source, document, etag, last_modified, document_digest, checked_at, status,
    error_code, error_message, publication_id, blocked_json)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
  ON CONFLICT (source) DO UPDATE SET document = excluded.document, etag = excluded.etag,
    last_modified = excluded.last_modified, document_digest = excluded.document_digest,
    checked_at = excluded.checked_at, status = excluded.status, error_code = excluded.error_code,
    error_message = excluded.error_message, publication_id = excluded.publication_id,
    blocked_json = excluded.blocked_json`;

/**
 * Records a proposal in one statement: the first sighting of a digest inserts the row with its operations; a
 * later one (on any replica) keeps `detected_at` and the operations and refreshes the rest. The upsert takes the
 * row's lock, so two replicas recording one digest at once end with one row.
 */
const RECORD_PROPOSAL = `
  INSERT INTO drift_proposals (source, document_digest, publication_id, detected_at, last_seen_at,
    operations_json, added_json, changed_json, removed_json, proposal_id, tool_count, summary_json)
  VALUES ($1, $2, $3, $4, $4, $5, $6, $7, $8, $9, $10, $11)
  ON CONFLICT (source, document_digest) DO UPDATE SET last_seen_at = excluded.detected_at,
    publication_id = excluded.publication_id, added_json = excluded.added_json, changed_json = excluded.changed_json,
    removed_json = excluded.removed_json, proposal_id = excluded.proposal_id, tool_count = excluded.tool_count,
    summary_json = excluded.summary_json
  RETURNING *`;

/** The drift store port (../ports.ts) on PostgreSQL, over tables `drift_state` and `drift_proposals` (./migrations.ts). */
export class PostgresDriftStore implements DriftStore {
  constructor(private readonly pool: PostgresPool) {}

  async saveState(state: DriftState): Promise<void> {
    await this.pool.query(UPSERT_STATE, [
      state.source,
      state.document,
      state.etag,
      state.lastModified,
      state.documentDigest,
      state.checkedAt,
      state.status,
      state.error?.code ?? null,
      state.error?.message ?? null,
      state.publicationId,
      JSON.stringify(state.blocked),
    ]);
  }

  async loadState(source: string): Promise<DriftState | undefined> {
    const row = (await this.pool.query<StateRow>('SELECT * FROM drift_state WHERE source = $1', [source])).rows[0];
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
    const { rows } = await this.pool.query<ProposalRow>(RECORD_PROPOSAL, [
      proposal.source,
      proposal.digest,
      proposal.publicationId,
      proposal.detectedAt,
      JSON.stringify(operations),
      JSON.stringify(proposal.added),
      JSON.stringify(proposal.changed),
      JSON.stringify(proposal.removed),
      proposal.proposalId,
      proposal.toolCount,
      JSON.stringify(proposal.summary),
    ]);
    return proposalOf(rows[0]!);
  }

  async proposal(source: string, digest: string): Promise<DriftProposal | undefined> {
    const { rows } = await this.pool.query<ProposalRow>('SELECT * FROM drift_proposals WHERE source = $1 AND document_digest = $2', [
      source,
      digest,
    ]);
    return rows[0] ? proposalOf(rows[0]) : undefined;
  }

  async proposalOperations(source: string, digest: string): Promise<Operation[] | McpTool[] | undefined> {
    const { rows } = await this.pool.query<{ operations_json: string }>(
      'SELECT operations_json FROM drift_proposals WHERE source = $1 AND document_digest = $2',
      [source, digest],
    );
    return rows[0] ? (JSON.parse(rows[0].operations_json) as Operation[] | McpTool[]) : undefined;
  }
}

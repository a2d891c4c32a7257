import type { LoginSummary } from '../../credentials/index.js';

/** A tool as the consent page shows it. */
export interface ConsentTool {
  name: string;
  title: string | null;
  description: string;
  source: string;
  readOnly: boolean;
  destructive: boolean;
  fingerprint: string;
  /** What calling the tool reaches: an HTTP operation of the source's API, or a tool of an MCP server. */
  target: { kind: 'http'; method: string; path: string } | { kind: 'mcp'; server: string; tool: string };
  /** Login ids (`<source>/<scheme>`) that calling this tool may use (any one alternative suffices). */
  logins: string[];
  /**
   * Set when the tool was reviewed `approval: each-call` (its lock entry): each call waits for a person's approval,
   * the session's own (`approvers: null`) or one of the people the entry names (docs/approvals.md).
   */
  eachCall?: { approvers: readonly string[] | null };
  /** Set when drift blocks the tool: why. The page shows it, and it cannot be chosen. */
  blocked?: string;
}

/** What the consent page offers, as the composition root provides it: the callable tools and the logins. */
export interface ConsentOffer {
  /** The tools of the in-use publications; those blocked by drift carry `blocked` and cannot be chosen. */
  listTools(): ConsentTool[];
  /** The logins (configured credentials) the person can allow a session to use. */
  listLogins(): LoginSummary[];
  /**
   * What changed in a tool since the version with `approvedFingerprint`, in the sentences `gateway diff` prints;
   * undefined when that earlier version is no longer known (the page then says so rather than guess).
   */
  changesSince(toolName: string, approvedFingerprint: string): string[] | undefined;
}

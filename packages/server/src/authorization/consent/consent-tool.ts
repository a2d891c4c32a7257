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
  /** Login ids (`<source>/<scheme>`) that calling this tool may use (any one alternative suffices). */
  logins: string[];
}

/** What the consent page offers, as the composition root provides it: the callable tools and the logins. */
export interface ConsentOffer {
  /** The tools currently callable (in-use, not drifted). */
  listTools(): ConsentTool[];
  /** The logins (configured credentials) the person can allow a session to use. */
  listLogins(): LoginSummary[];
}

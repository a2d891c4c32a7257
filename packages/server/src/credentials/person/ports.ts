/**
 * The linked accounts of per-person logins (`oauthPerson`): which person linked which login, as whom at the
 * provider, and until when the access token lasts. Metadata only: the tokens themselves live in the vault
 * (token-vault.ts), never in the database. An awaitable port owned by the credentials area; the SQLite adapter
 * is in ./sqlite/, and ./contract/ holds the suite every adapter passes.
 */

/** One person's link of one login. */
export interface LinkedAccount {
  /** The gateway's person (the session's subject: `local:<name>` or `oidc:<issuer>#<sub>`). */
  person: string;
  /** The login (`<source>/<scheme>`; an MCP source's `<source>/mcp`), whose credential is of type `oauthPerson`. */
  login: string;
  /** The person's `sub` at the provider (ID token or UserInfo); null when the provider tells neither. */
  subject: string | null;
  /** The scopes the provider granted, sorted. */
  scopes: string[];
  /** Epoch milliseconds: when the person linked (a re-link moves it). */
  linkedAt: number;
  /** Epoch milliseconds: when the current access token expires (a refresh moves it). */
  expiresAt: number;
}

export interface LinkedAccounts {
  /** Records a link, replacing the person's earlier link of the same login (a re-link). */
  link(account: LinkedAccount): Promise<void>;
  find(person: string, login: string): Promise<LinkedAccount | undefined>;
  /** Links ordered by person, then login; only one person's with `person`. */
  list(filter?: { person?: string }): Promise<LinkedAccount[]>;
  /**
   * After a refresh: the new expiry and scopes, in one step that changes nothing when the link was removed
   * meanwhile (a refresh never brings back an unlinked account). False when there was no link.
   */
  refreshed(person: string, login: string, update: { expiresAt: number; scopes: string[] }): Promise<boolean>;
  /** Removes a link; false when there was none. */
  unlink(person: string, login: string): Promise<boolean>;
}

/** `host:port/database` of a PostgreSQL connection string: what messages and logs may show (never the user's password). */
export function describeDatabase(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    return `${url.hostname || 'localhost'}:${url.port || '5432'}${url.pathname || '/'}`;
  } catch {
    return 'the configured database';
  }
}

/** Whether `value` is a `postgres://` (or `postgresql://`) URL. */
export function isPostgresUrl(value: string): boolean {
  try {
    return ['postgres:', 'postgresql:'].includes(new URL(value).protocol);
  } catch {
    return false;
  }
}

/** `text` with the connection string's password taken out, should a driver message ever quote it. */
export function withoutPassword(text: string, connectionString: string): string {
  let password = '';
  try {
    password = decodeURIComponent(new URL(connectionString).password);
  } catch {
    return text;
  }
  return password.length >= 4 ? text.split(password).join('***') : text;
}

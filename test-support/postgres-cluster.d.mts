/** Types of test-support/postgres-cluster.mjs (plain JavaScript, so the benches start the same cluster). */

/** The bound on a cluster's start (initdb and pg_ctl each), in seconds. */
export declare const START_TIMEOUT_SECONDS: number;

export interface PostgresServer {
  /** 127.0.0.1 and the port the cluster listens on. */
  host: string;
  port: number;
  /** The superuser's password (SCRAM over TCP). */
  password: string;
  /** The cluster's temporary folder (its data directory is `<folder>/data`), removed by `stop()`. */
  folder: string;
  /** A connection string to database `name` (default `postgres`) as the superuser, over TCP with the password. */
  url(name?: string): string;
  /** Creates a fresh, empty database and returns its connection string. */
  createDatabase(): Promise<string>;
  /** Runs SQL through the unix socket as the superuser (setup only: what a test asserts goes through `pg`). */
  psql(sql: string, database?: string): Promise<string>;
  /** Restarts the cluster (`pg_ctl restart -m fast`): every connection is closed, the data and port stay. */
  restart(): Promise<void>;
  /** Stops the cluster (immediate shutdown) and removes its folder. */
  stop(): Promise<void>;
}

/** The folder of Debian's PostgreSQL binaries: PG_BIN, else <root>/15/bin, else the newest version under <root>. */
export declare function postgresBinaries(root?: string, env?: NodeJS.ProcessEnv): string;

/** Stops the cluster and removes its folder once process `watched` is gone; `kill()` ends the watchdog. */
export declare function stopWhenGone(watched: number, command: [string, string[]], folder: string): { kill(): void };

/** Starts a throw-away cluster; `durable: true` keeps fsync and synchronous commits on (default off). */
export declare function startPostgres(options?: { durable?: boolean }): Promise<PostgresServer>;

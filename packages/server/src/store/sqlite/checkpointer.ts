import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { SqliteDatabase } from './database.js';

/** How often the background thread checkpoints the WAL into the database file. */
export const CHECKPOINT_INTERVAL_MS = 250;
/** The WAL file is truncated back to this size when it restarts (it can grow between checkpoints). */
export const WAL_SIZE_LIMIT_BYTES = 16 * 1024 * 1024;
/** SQLite's own default, restored when the background thread cannot run. */
const DEFAULT_AUTOCHECKPOINT_PAGES = 1000;

// The thread's code: its own connection to the same file, PASSIVE checkpoints only (they never block a
// writer, and never wait for one). CommonJS so `require` of the native driver works in an eval'd worker.
const WORKER_SOURCE =
  `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
let database;
try {
  database = new Database(workerData.path, { fileMustExist: true });
  database.pragma('busy_timeout = 5000');
} catch (error) {
  parentPort.postMessage({ error: String(error && error.message || error) });
  process.exit(0);
}
const checkpoint = () => {
  try { database.pragma('wal_checkpoint(PASSIVE)'); } ` +
  `catch (error) { parentPort.postMessage({ error: String(error && error.message || error) }); }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.postMessage({ ready: true });
parentPort.on('message', () => {
  clearInterval(timer);
  checkpoint();
  database.close();
  parentPort.close();
});
`;

export interface BackgroundCheckpointer {
  /** Stops the thread after one last checkpoint. */
  stop(): Promise<void>;
}

/**
 * Moves WAL checkpoints off the event loop. With `synchronous = NORMAL` a commit writes to the WAL and does not
 * fsync; the checkpoint, which SQLite otherwise runs inside whichever commit crosses 1,000 WAL pages, copies
 * pages into the database file and fsyncs both files, which made one commit in a few hundred take milliseconds
 * (figures: docs/performance.md, "WAL checkpoints off the event loop"). Here a
 * worker thread with its own connection runs PASSIVE checkpoints every CHECKPOINT_INTERVAL_MS, and the main
 * connection's automatic checkpoints are turned off once the thread is running (restored if it fails).
 * Durability is unchanged: a commit is in the WAL either way, and a checkpoint only moves committed pages.
 */
export function startBackgroundCheckpointer(
  database: SqliteDatabase,
  path: string,
  warn: (message: string) => void = () => undefined,
): BackgroundCheckpointer {
  database.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
  let worker: Worker;
  try {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { driver, path, intervalMs: CHECKPOINT_INTERVAL_MS } });
  } catch (error) {
    // Never a reason not to start: SQLite's own checkpoints stay on.
    warn(`background WAL checkpoints not started (${(error as Error).message}): checkpoints run inside commits`);
    return { stop: async () => undefined };
  }
  worker.unref();
  let isRunning = false;
  let isStopping = false;
  const fallBack = (reason: string) => {
    if (database.open) database.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`);
    warn(`background WAL checkpoints stopped (${reason}): checkpoints run inside commits again`);
  };
  worker.on('message', (message: { ready?: true; error?: string }) => {
    if (message.ready) {
      isRunning = true;
      if (database.open) database.pragma('wal_autocheckpoint = 0');
    } else if (message.error) {
      warn(`background WAL checkpoint failed: ${message.error}`);
    }
  });
  worker.on('error', (error) => {
    isRunning = false;
    fallBack(error.message);
  });
  const exited = new Promise<void>((resolve) =>
    worker.once('exit', () => {
      if (isRunning && !isStopping) fallBack('the thread exited');
      isRunning = false;
      resolve();
    }),
  );
  return {
    async stop() {
      isStopping = true;
      // The thread is unref'd so it never holds the process open; while stopping it must, or the event loop
      // can empty before its exit arrives (a CLI whose start-up failed would then end with Node's exit 13).
      worker.ref();
      if (isRunning) worker.postMessage('stop');
      else await worker.terminate();
      isRunning = false;
      await exited;
    },
  };
}

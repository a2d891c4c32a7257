import { EventEmitter } from 'node:events';
import {
  compareText,
  createAjv,
  stringifyExact,
  validatableSchema,
  withDoubles,
  describeSchemaErrors,
  inUsePublication,
  type JsonSchema,
  type LockedEntry,
  type LockedMcpTool,
  type LockedOperation,
  type Lockfile,
  type LockedSource,
  type Publication,
  type ValidateFunction,
} from '@gateway/core';
import { mcpToolAnnotations, toolAnnotations, type ToolAnnotations } from './annotations.js';

/** The tool as `tools/list` shows it (built once per snapshot, shared by every request). */
export interface ListedTool {
  name: string;
  title?: string;
  description: string;
  inputSchema: { [key: string]: unknown };
  annotations: ToolAnnotations;
}

/**
 * The `tools/list` JSON of a listed tool whose inputSchema holds integers beyond 2^53 (BigInts, kept exact from
 * the lock), with their exact digits. The listed object itself carries doubles, which the MCP SDK (zod, then
 * JSON.stringify) can handle; the fast path writes this text instead (docs/lockfile.md › Large integers).
 */
export const exactListedToolJson = new WeakMap<ListedTool, string>();

/** Outcome of validating a call's arguments against the frozen inputSchema. */
export type ArgumentCheck = { ok: true } | { ok: false; problems: string[] };

interface IndexedToolBase {
  name: string;
  sourceName: string;
  publicationId: string;
  /** The lock entry, whatever the kind: title, description and fingerprint are read from here. */
  entry: LockedEntry;
  annotations: ToolAnnotations;
  listed: ListedTool;
  /** Validates arguments with the publication's compiled validator (compiled on first use, then kept). */
  validate(argumentsValue: unknown): ArgumentCheck;
}

/** A tool of an OpenAPI source: an HTTP operation. */
export interface OpenApiIndexedTool extends IndexedToolBase {
  kind: 'openapi';
  operation: LockedOperation;
}

/** A tool of an MCP source: forwarded to the upstream server under its upstream name. */
export interface McpIndexedTool extends IndexedToolBase {
  kind: 'mcp';
  mcpTool: LockedMcpTool;
}

/** One callable tool of an in-use publication, tagged by its source's kind (the executor switches on it). */
export type IndexedTool = OpenApiIndexedTool | McpIndexedTool;

/** An immutable view of what may be served: swapped whole on reload, never mutated. */
export interface PublicationSnapshot {
  /** Increments on every swap; lets callers tell snapshots apart in logs. */
  readonly generation: number;
  readonly tools: ReadonlyMap<string, IndexedTool>;
  /** Tool names in code-unit order: the deterministic order of `tools/list`. */
  readonly names: readonly string[];
  /** Publication id per source name (in use only). */
  readonly publications: ReadonlyMap<string, string>;
  /** The verified lock this snapshot was built from (null before the first), for readers that need all of it. */
  readonly lock: Lockfile | null;
}

/** Why a tool is blocked by drift: the sentence the drift watcher (drift/watcher.ts) wrote for a person to read. */
export type BlockedReasons = ReadonlyMap<string, string>;

export type RegistryChange = { kind: 'snapshot'; generation: number } | { kind: 'blocked'; sourceName: string };

/** How many served tool versions are remembered for re-approval (a few per tool over many publications). */
const MAX_SERVED_ENTRIES = 20_000;

const EMPTY_SNAPSHOT: PublicationSnapshot = {
  generation: 0,
  tools: new Map(),
  names: [],
  publications: new Map(),
  lock: null,
};

/**
 * Holds the in-memory tool index of the in-use publications and the drift overlay.
 *
 * - `replace(lock)` builds a new snapshot and swaps it in one assignment; a request that already took
 *   `snapshot()` keeps using the old one to the end (in-flight calls finish on the publication they started on).
 * - Only `in use` publications and `selected`, `supported` operations become tools; `proposed` never does.
 * - `setBlocked(source, reasons)` overlays drift: blocked tools are hidden from lists and refused on call.
 */
export class PublicationRegistry {
  private current: PublicationSnapshot = EMPTY_SNAPSHOT;
  private loaded = false;
  /** Identity (source, id, signature) of the publications served, to tell real changes from rewrites. */
  private servedKey: string | undefined;
  private readonly blocked = new Map<string, BlockedReasons>();
  private readonly events = new EventEmitter();
  /** Validators survive reloads while the publication (id + signature + fingerprint) is unchanged. */
  private validatorCache = new Map<string, ValidateFunction>();
  /**
   * Every tool this process has served, by name and fingerprint (bounded, oldest forgotten first): the lock drops a
   * retired publication, so this is where the consent page finds the version a person approved to say what
   * changed since (docs/authorization.md › Re-approval).
   */
  private readonly servedEntries = new Map<string, LockedEntry>();

  /** True once a verified lock has been loaded (`/readyz`). */
  get isReady(): boolean {
    return this.loaded;
  }

  snapshot(): PublicationSnapshot {
    return this.current;
  }

  /** Builds the index of `lock` (which must already be verified) and swaps it in atomically. */
  replace(lock: Lockfile): PublicationSnapshot {
    const tools = new Map<string, IndexedTool>();
    const publications = new Map<string, string>();
    const publicationKeys: string[] = [];
    const nextCache = new Map<string, ValidateFunction>();
    // A fresh ajv per snapshot: ajv keeps every schema it compiled, so one shared instance would grow on
    // each reload. Validators carried over from the previous snapshot keep their own instance alive.
    const ajv = createAjv();
    for (const source of lock.sources) {
      const publication = inUsePublication(source) as Publication<LockedEntry> | undefined;
      if (!publication) continue;
      publications.set(source.name, publication.id);
      const publicationKey = `${source.name}\u0000${publication.id}\u0000${publication.signature ?? ''}`;
      publicationKeys.push(publicationKey);
      for (const operation of publication.operations) {
        if (!operation.selected || operation.status !== 'supported') continue;
        tools.set(operation.tool, this.indexTool(source.kind, source.name, publication.id, operation, publicationKey, nextCache, ajv));
      }
    }
    this.validatorCache = nextCache;
    this.rememberServed(tools);
    const servedKey = [...publicationKeys].sort().join('\n');
    const isNewPublication = servedKey !== this.servedKey;
    this.servedKey = servedKey;
    const names = [...tools.keys()].sort(compareText);
    this.current = Object.freeze({ generation: this.current.generation + 1, tools, names, publications, lock });
    this.loaded = true;
    // A lock rewrite that only touched a proposal changes nothing a client sees: no list-changed event.
    if (isNewPublication) {
      this.events.emit('change', { kind: 'snapshot', generation: this.current.generation } satisfies RegistryChange);
    }
    return this.current;
  }

  /**
   * Replaces the drift overlay of one source: the named tools stop being listed or callable, with the
   * given reason. An empty map unblocks the source.
   */
  setBlocked(sourceName: string, reasons: ReadonlyMap<string, string>): void {
    const previous = this.blocked.get(sourceName);
    if (reasons.size === 0) this.blocked.delete(sourceName);
    else this.blocked.set(sourceName, new Map(reasons));
    if (!sameReasons(previous, reasons)) {
      this.events.emit('change', { kind: 'blocked', sourceName } satisfies RegistryChange);
    }
  }

  /** A tool version this process served (the current one or an earlier), by name and fingerprint; undefined when unknown. */
  servedEntry(toolName: string, fingerprint: string): LockedEntry | undefined {
    return this.servedEntries.get(`${toolName}\u0000${fingerprint}`);
  }

  private rememberServed(tools: ReadonlyMap<string, IndexedTool>): void {
    for (const tool of tools.values()) {
      const key = `${tool.entry.tool}\u0000${tool.entry.fingerprint}`;
      this.servedEntries.delete(key);
      this.servedEntries.set(key, tool.entry);
    }
    for (const fingerprint of this.servedEntries.keys()) {
      if (this.servedEntries.size <= MAX_SERVED_ENTRIES) break;
      this.servedEntries.delete(fingerprint);
    }
  }

  /** The drift reason when `tool` (of `sourceName`) is blocked, else undefined. */
  blockedReason(sourceName: string, toolName: string): string | undefined {
    return this.blocked.get(sourceName)?.get(toolName);
  }

  /** Every blocked tool, by source (for status reports). */
  blockedTools(): ReadonlyMap<string, BlockedReasons> {
    return this.blocked;
  }

  /** Subscribes to snapshot swaps and drift changes; returns the unsubscribe function. */
  onChange(listener: (change: RegistryChange) => void): () => void {
    this.events.on('change', listener);
    return () => this.events.off('change', listener);
  }

  private indexTool(
    kind: LockedSource['kind'],
    sourceName: string,
    publicationId: string,
    operation: LockedEntry,
    publicationKey: string,
    nextCache: Map<string, ValidateFunction>,
    ajv: ReturnType<typeof createAjv>,
  ): IndexedTool {
    const cacheKey = `${publicationKey}\u0000${operation.tool}\u0000${operation.fingerprint}`;
    const annotations = kind === 'openapi' ? toolAnnotations(operation as LockedOperation) : mcpToolAnnotations(operation as LockedMcpTool);
    const exactSchema = objectSchema(operation.inputSchema);
    const listed: ListedTool = {
      name: operation.tool,
      ...(operation.title ? { title: operation.title } : {}),
      description: operation.description,
      inputSchema: withDoubles(exactSchema),
      annotations,
    };
    if (listed.inputSchema !== exactSchema) exactListedToolJson.set(listed, stringifyExact({ ...listed, inputSchema: exactSchema }));
    let compiled = this.validatorCache.get(cacheKey);
    if (compiled) nextCache.set(cacheKey, compiled);
    const tagged =
      kind === 'openapi'
        ? { kind: 'openapi' as const, operation: operation as LockedOperation }
        : { kind: 'mcp' as const, mcpTool: operation as LockedMcpTool };
    return {
      ...tagged,
      name: operation.tool,
      sourceName,
      publicationId,
      entry: operation,
      annotations,
      listed,
      validate(argumentsValue: unknown): ArgumentCheck {
        // Compiled lazily, once per publication: start-up with thousands of tools stays fast, and the
        // compiled function is carried into later snapshots while the publication is unchanged.
        if (!compiled) {
          compiled = ajv.compile(
            validatableSchema(kind === 'mcp' ? validationSchema(operation.inputSchema) : operation.inputSchema) as object,
          );
          nextCache.set(cacheKey, compiled);
        }
        if (compiled(argumentsValue)) return { ok: true };
        return { ok: false, problems: describeSchemaErrors(compiled.errors) };
      },
    };
  }
}

/**
 * An upstream MCP tool's schema as the validator compiles it: a `$schema` naming draft-07 or 2019-09 (what
 * zod and many SDKs emit) is dropped, so the 2020-12 validator applies its own dialect, which reads the
 * keywords such schemas use the same way. The schema the client is shown is unchanged.
 */
function validationSchema(schema: JsonSchema): object {
  if (typeof schema === 'boolean') return { type: 'object' };
  const { $schema: dialect, ...rest } = schema;
  return typeof dialect === 'string' && !dialect.includes('2020-12') ? rest : schema;
}

/** MCP requires `inputSchema` to be an object schema (`type: "object"`); the importer always writes one. */
function objectSchema(schema: JsonSchema): { [key: string]: unknown } {
  if (typeof schema === 'boolean') return { type: 'object' };
  return schema.type === undefined ? { type: 'object', ...schema } : schema;
}

function sameReasons(a: ReadonlyMap<string, string> | undefined, b: ReadonlyMap<string, string>): boolean {
  const left = a ?? new Map<string, string>();
  if (left.size !== b.size) return false;
  for (const [key, value] of b) if (left.get(key) !== value) return false;
  return true;
}

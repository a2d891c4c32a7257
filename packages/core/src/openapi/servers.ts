/**
 * Server URL of an operation. OAS 3.x §4.8.10 (Operation `servers`) and §4.8.9 (Path Item `servers`): the most
 * specific non-empty list wins (operation > path item > document); a missing or empty document list means one
 * server with url `/` (OAS 3.x §4.8.1 "servers"). The first server of the chosen list is used, its variables
 * replaced by their defaults (§4.8.6 Server Variable Object: `default` is REQUIRED and used when none is given).
 * A relative URL is resolved against the document's own URL (§4.8.5 "relative to the location where the
 * document is being served"); a document read from a file has no such location, so it needs an absolute URL.
 */
import { isObject } from './references.js';

export type ServerResolution = { url: string } | { url: null; problem: string };

function firstServer(list: unknown): Record<string, unknown> | null {
  if (!Array.isArray(list) || list.length === 0) return null;
  return isObject(list[0]) ? list[0] : null;
}

/** Replaces `{name}` by the value configured for it (`sources.<name>.server.variables`), else its default. */
export function substituteServerVariables(
  url: string,
  variables: unknown,
  values: Readonly<Record<string, string>> = {},
): { url: string } | { problem: string } {
  let problem: string | null = null;
  const substituted = url.replace(/\{([^}]*)\}/g, (match, name: string) => {
    const variable = isObject(variables) ? variables[name] : undefined;
    const configured = Object.hasOwn(values, name) ? values[name] : undefined;
    const value = configured ?? (isObject(variable) ? variable.default : undefined);
    if (typeof value !== 'string') {
      problem ??= `the server variable "${name}" of "${url}" has no default value`;
      return match;
    }
    return value;
  });
  return problem === null ? { url: substituted } : { problem };
}

export function resolveServerUrl(
  levels: { operation: unknown; pathItem: unknown; document: unknown },
  documentUrl: string | null,
  values: Readonly<Record<string, string>> = {},
): ServerResolution {
  const declared = firstServer(levels.operation) ?? firstServer(levels.pathItem) ?? firstServer(levels.document);
  const server = declared ?? { url: '/' };
  if (typeof server.url !== 'string') return { url: null, problem: 'the server object has no url' };
  if (declared === null && documentUrl === null) {
    return {
      url: null,
      problem: 'the document declares no servers (the default is "/", relative to where the document is served)',
    };
  }
  const substituted = substituteServerVariables(server.url, server.variables, values);
  if ('problem' in substituted) return { url: null, problem: substituted.problem };
  let absolute: URL;
  try {
    absolute = documentUrl === null ? new URL(substituted.url) : new URL(substituted.url, documentUrl);
  } catch {
    return {
      url: null,
      problem:
        documentUrl === null
          ? `the server URL "${substituted.url}" is not absolute and the document was not read from a URL`
          : `the server URL "${substituted.url}" is not a valid URL`,
    };
  }
  if (absolute.protocol !== 'http:' && absolute.protocol !== 'https:') {
    return { url: null, problem: `the server URL "${absolute.href}" is not http or https` };
  }
  absolute.hash = '';
  absolute.search = '';
  // The request URL is this server URL followed by the path template (which starts with `/`): drop trailing `/`.
  return { url: absolute.href.replace(/\/+$/, '') };
}

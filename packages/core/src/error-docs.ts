/**
 * docs/errors.md, rendered from the registry (error-codes.ts). `pnpm gen:errors` writes it; a test fails when
 * the checked-in file differs, so the document can never list a code the code does not know, or miss one.
 */
import { CATEGORY_MEANINGS, ERROR_AREAS, ERRORS, EXIT_CODES, type ErrorArea, type ErrorCategory, type ErrorSpec } from './errors.js';

const INTRODUCTION = `# Error codes

<!-- Generated from packages/core/src/error-codes.ts by \`pnpm gen:errors\`; edit the registry, not this file. -->

Every failure the gateway reports carries a stable code. The CLI prints \`error CODE: message\` on stderr
(and \`{"error": {...}}\` on stdout with \`--json\`) and exits with the code of the error's category
([cli.md](cli.md#output-errors-and-exit-codes)); the server maps the same codes to JSON-RPC errors and
\`isError\` tool results on \`/mcp\`, to OAuth error responses on OAuth endpoints ([authorization.md](authorization.md)),
and to \`application/problem+json\` elsewhere. Messages may improve between releases; codes do not change.

Reasons why an *operation* is unsupported (\`SERVER_URL_MISSING\`, \`MEDIA_TYPE_UNSUPPORTED\`, …) are not errors:
they are recorded in the lock and listed in [lockfile.md](lockfile.md#support-status-and-reason-codes).
`;

/** Prose that follows a section's table. */
const AREA_NOTES: Partial<Record<ErrorArea, string>> = {
  verification:
    '`LOCK_VERIFICATION_FAILED` carries the findings of this section in `details.problems`; the server refuses to start\n' +
    'or reload a lock that does not verify.',
  serving:
    'Tool failures on `/mcp` (invalid arguments, upstream 4xx/5xx, time-outs, oversized responses, drift) are\n' +
    '`isError` tool results whose text names the problem; unknown tools and malformed requests are JSON-RPC errors\n' +
    '(`-32602`, `-32600`, `-32700`); see [server.md](server.md).',
  authorization:
    'OAuth endpoints answer with the standard OAuth error codes (`invalid_request`, `invalid_grant`,\n' +
    '`invalid_client`, `invalid_target`, `unauthorized_client`, `access_denied`…), and `/mcp` refuses bad tokens\n' +
    'with 401 `invalid_token` and a `WWW-Authenticate` challenge ([authorization.md](authorization.md)).',
};

export function renderErrorDocs(): string {
  const lines: string[] = [INTRODUCTION, '| category | exit | |', '|---|---|---|'];
  for (const [category, exit] of Object.entries(EXIT_CODES) as Array<[ErrorCategory, number]>) {
    lines.push(`| \`${category}\` | ${exit} | ${CATEGORY_MEANINGS[category]} |`);
  }
  const entries = Object.entries(ERRORS) as Array<[string, ErrorSpec]>;
  for (const [area, title] of Object.entries(ERROR_AREAS) as Array<[ErrorArea, string]>) {
    lines.push('', `## ${title}`, '', '| code | category | exit | meaning |', '|---|---|---|---|');
    for (const [code, spec] of entries) {
      if (spec.area !== area) continue;
      const status = spec.status === undefined ? '' : ` (HTTP ${spec.status})`;
      lines.push(`| \`${code}\` | ${spec.category} | ${EXIT_CODES[spec.category]} | ${spec.meaning}${status} |`);
    }
    const note = AREA_NOTES[area];
    if (note) lines.push('', note);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Redaction of the credentials an upstream echoes back: one mechanism for every source kind. The OpenAPI
 * executor gives it the call's header, query and cookie credentials; an MCP source's connection gives it
 * the vault values it uses (a stdio server's `env` secrets, an HTTP server's credential and the token it got);
 * a stdio server's stderr goes through it before it is logged.
 *
 * A value is searched for as is and in the encodings an upstream commonly echoes it in (`encodedForms`). The
 * forms of a set of values are computed once (`secretForms`), so a check costs one substring search per form:
 * a result that carries none costs a few searches over text the gateway holds anyway.
 *
 * Minimum length: values (and encoded forms) shorter than 6 characters are not searched for. A shorter value
 * is common in ordinary text (`true`, `1234`, `admin`), so replacing it would corrupt results, tool names and
 * JSON keys everywhere; and a secret that short is guessed by trying, so hiding its echo protects nothing.
 */

/** Shortest value (and encoded form) searched for; see the module comment for why 6. */
export const MIN_SECRET_LENGTH = 6;

/** What a found form is replaced by. */
export const REDACTED = '[redacted]';

/** The searchable forms of a set of secret values (see `secretForms`). */
export interface SecretForms {
  /** Every form, longest first, so a whole encoding is replaced before a shorter form found inside it. */
  readonly forms: readonly string[];
  /**
   * The forms that hold no other form (a text holding `Bearer <token>` holds `<token>`): searching for these
   * alone says whether a text holds any form, so a text without secrets costs fewer searches.
   */
  readonly anchors: readonly string[];
  /**
   * The anchors as they appear inside JSON text (JSON-escaped): a string holding a form, once serialised,
   * holds that form's escaped text, so one search of a serialised value says whether any string in it needs
   * redaction.
   */
  readonly inJson: readonly string[];
}

/** No secrets: every check returns at once. */
export const NO_SECRETS: SecretForms = Object.freeze({ forms: Object.freeze([]), anchors: Object.freeze([]), inJson: Object.freeze([]) });

/**
 * The forms of credential values: each value, the part after its first space (the token of `Bearer …`), and
 * for HTTP Basic (RFC 7617) the decoded `user:password` and password, each in every encoding of `encodedForms`.
 */
export function secretForms(values: Iterable<string>): SecretForms {
  const list = [...values];
  if (list.length === 0) return NO_SECRETS;
  // A call's credentials repeat from call to call: the same values give the very same forms, computed once.
  const key = JSON.stringify(list);
  let found = setsCache.get(key);
  if (!found) {
    found = computeSecretForms(list);
    if (setsCache.size >= FORMS_CACHE_SIZE) setsCache.delete(setsCache.keys().next().value as string);
    setsCache.set(key, found);
  }
  return found;
}

function computeSecretForms(values: readonly string[]): SecretForms {
  const plain = new Set<string>();
  const add = (value: string) => {
    if (value.length >= MIN_SECRET_LENGTH) plain.add(value);
    const space = value.indexOf(' ');
    if (space > 0 && value.length - space - 1 >= MIN_SECRET_LENGTH) plain.add(value.slice(space + 1));
    // HTTP Basic (RFC 7617): the password itself, and `user:password`, are what an upstream would echo decoded.
    if (/^basic /i.test(value)) {
      const decoded = Buffer.from(value.slice(6).trim(), 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon >= 0) {
        if (decoded.length >= MIN_SECRET_LENGTH) plain.add(decoded);
        if (decoded.length - colon - 1 >= MIN_SECRET_LENGTH) plain.add(decoded.slice(colon + 1));
      }
    }
  };
  for (const value of values) add(value);
  if (plain.size === 0) return NO_SECRETS;
  const forms = new Set<string>();
  for (const secret of plain) for (const form of encodedForms(secret)) if (form.length >= MIN_SECRET_LENGTH) forms.add(form);
  const anchors = holdingNoOther([...forms]);
  return Object.freeze({
    forms: Object.freeze([...forms].sort((a, b) => b.length - a.length)),
    anchors: Object.freeze(anchors),
    inJson: Object.freeze(holdingNoOther(anchors.map((form) => JSON.stringify(form).slice(1, -1)))),
  });
}

/** The strings that contain none of the others (shortest first): a text holds one of `strings` iff it holds one of these. */
function holdingNoOther(strings: string[]): string[] {
  const kept: string[] = [];
  for (const candidate of [...new Set(strings)].sort((a, b) => a.length - b.length)) {
    if (!kept.some((shorter) => candidate.includes(shorter))) kept.push(candidate);
  }
  return kept;
}

/** Sets of values already expanded (bounded, oldest dropped). */
const setsCache = new Map<string, SecretForms>();
const FORMS_CACHE_SIZE = 1_000;

/**
 * The forms in which an upstream commonly echoes a value: as is, JSON-escaped, percent-encoded (either hex
 * case, `+` for space, or every byte escaped), base64 and base64url (padded or not, and at each of the three
 * byte alignments it can take inside a longer encoded text), and hex in either case. Not covered: other
 * encodings, transformations (hashes, case changes, reversal) and secrets split across fields (docs/security.md).
 */
export function encodedForms(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const forms = new Set<string>([secret]);
  forms.add(JSON.stringify(secret).slice(1, -1));
  forms.add(JSON.stringify(secret).slice(1, -1).replace(/\//g, '\\/'));
  const percent = encodeURIComponent(secret);
  forms.add(percent);
  forms.add(percent.replace(/%[0-9A-F]{2}/g, (escaped) => escaped.toLowerCase()));
  forms.add(percent.replace(/[!'()*]/g, (character) => `%${character.charCodeAt(0).toString(16).toUpperCase()}`));
  forms.add(new URLSearchParams({ s: secret }).toString().slice(2));
  const everyByte = [...bytes].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');
  forms.add(everyByte);
  forms.add(everyByte.toUpperCase());
  const hex = bytes.toString('hex');
  forms.add(hex);
  forms.add(hex.toUpperCase());
  for (const offset of [0, 1, 2]) {
    // The secret preceded by `offset` bytes: the characters that also carry those bytes (and the last one, which
    // also carries what follows) differ with the neighbours, so only the stable middle is searched for.
    const shifted = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64');
    const total = offset + bytes.length;
    const head = Math.ceil((offset * 8) / 6);
    const tail = total % 3 === 0 ? 0 : 1;
    const padding = (shifted.match(/=+$/) ?? [''])[0].length;
    const core = shifted.slice(head, shifted.length - padding - tail);
    if (offset === 0) {
      forms.add(shifted);
      forms.add(shifted.slice(0, shifted.length - padding));
      forms.add(toBase64Url(shifted));
    }
    if (core.length >= 8) {
      forms.add(core);
      forms.add(toBase64Url(core));
    }
  }
  return [...forms];
}

function toBase64Url(base64: string): string {
  return base64.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** The text with every form replaced by `[redacted]` (the same string when it holds none). */
export function redactText(text: string, secrets: SecretForms): string {
  if (!textContainsSecret(text, secrets)) return text;
  let output = text;
  for (const form of secrets.forms) if (output.includes(form)) output = output.split(form).join(REDACTED);
  return output;
}

/** Whether a text holds any form (every form is at least MIN_SECRET_LENGTH long). */
export function textContainsSecret(text: string, secrets: SecretForms): boolean {
  return text.length >= MIN_SECRET_LENGTH && secrets.anchors.some((anchor) => text.includes(anchor));
}

/** Whether bytes (a binary answer, a decoded blob) hold any form: bytes cannot be redacted, only refused. */
export function bytesContainSecret(bytes: Uint8Array, secrets: SecretForms): boolean {
  if (secrets.anchors.length === 0) return false;
  const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return secrets.anchors.some((anchor) => buffer.includes(anchor));
}

/**
 * Whether the JSON text of a value (`JSON.stringify` of it) shows a form in any of its strings; when it does
 * not, `redactJsonValue` would return the value unchanged, so the walk is skipped.
 */
export function jsonTextContainsSecret(jsonText: string, secrets: SecretForms): boolean {
  return secrets.inJson.some((form) => jsonText.includes(form));
}

/** A copy of a JSON value with every form replaced in every string, object keys included. */
export function redactJsonValue(value: unknown, secrets: SecretForms): unknown {
  if (typeof value === 'string') return redactText(value, secrets);
  if (Array.isArray(value)) return value.map((item) => redactJsonValue(item, secrets));
  if (value === null || typeof value !== 'object') return value;
  // fromEntries defines own properties, so a `__proto__` key stays a key and never becomes a prototype.
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([key, item]) => [redactText(key, secrets), redactJsonValue(item, secrets)]),
  );
}

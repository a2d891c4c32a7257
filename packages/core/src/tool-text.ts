/**
 * Is a tool's text safe to show a model and a person? One answer for every source kind, every renderer.
 *
 * A tool's name, title, description and schema text reach the model as they are. A character the reviewer
 * cannot see (a zero-width space, a Unicode tag character spelling out "Ignore previous instructions…", a
 * right-to-left override that reorders what is shown) lets a description say one thing on screen and another to
 * the model. So such text makes the tool unsupported at import, with a reason (the text is kept in the lock,
 * never silently stripped), and every place that shows tool text to a person escapes those characters as
 * `\u{E0049}` and flags them (docs/security.md › Hidden text in tools).
 *
 * Hidden characters, exactly (docs/lockfile.md › Hidden text lists them too):
 * - every control character (Unicode Cc: U+0000–U+001F, U+007F–U+009F) except tab and line feed, and carriage
 *   return except directly before a line feed (a lone carriage return redraws a terminal line);
 * - every format character (Cf): zero-width space, joiners and non-joiner (U+200B–U+200D), the bidirectional
 *   marks, embeddings, overrides and isolates (U+200E, U+200F, U+061C, U+202A–U+202E, U+2066–U+2069), word
 *   joiner and invisible operators (U+2060–U+2064), U+FEFF, soft hyphen (U+00AD), interlinear annotations
 *   (U+FFF9–U+FFFB), the tag characters (U+E0001, U+E0020–U+E007F), …;
 * - every Default_Ignorable_Code_Point: the whole tag block U+E0000–U+E0FFF, variation selectors U+FE00–U+FE0D
 *   and U+E0100–U+E01EF, Hangul fillers (U+115F, U+1160, U+3164, U+FFA0), U+034F, U+180B–U+180F, …;
 * - unpaired surrogates (Cs), the line and paragraph separators U+2028 and U+2029.
 * Allowed although default-ignorable: U+FE0E and U+FE0F (text and emoji presentation), which follow emoji in
 * ordinary text and carry nothing.
 */

/** Longest title or description (in Unicode code points) a tool may have; longer ones make it unsupported. */
export const MAX_DESCRIPTION_LENGTH = 16_384;

/** The reasons tool text makes a tool `unsupported`, for both source kinds (docs/lockfile.md › Support status). */
export const TOOL_TEXT_REASON_CODES = ['TOOL_TEXT_HIDDEN_CHARACTERS', 'TOOL_DESCRIPTION_TOO_LONG'] as const;
export type ToolTextReasonCode = (typeof TOOL_TEXT_REASON_CODES)[number];

/** The candidates (before the exceptions of isHidden); also the quick pre-check, text without one is safe. */
const CANDIDATE = /[\p{Cc}\p{Cf}\p{Cs}\p{Default_Ignorable_Code_Point}\u2028\u2029]/u;

const TAB = 0x09;
const LINE_FEED = 0x0a;
const CARRIAGE_RETURN = 0x0d;

/** True when the code point at this place is hidden (see the module comment); `next` is the code point after it. */
function isHidden(codePoint: number, next: number | undefined, singleLine: boolean): boolean {
  if (codePoint === TAB || codePoint === LINE_FEED) return singleLine;
  if (codePoint === CARRIAGE_RETURN) return singleLine || next !== LINE_FEED;
  if (codePoint === 0xfe0e || codePoint === 0xfe0f) return false;
  if (codePoint < 0x7f && codePoint >= 0x20) return false;
  return CANDIDATE.test(String.fromCodePoint(codePoint));
}

/** `\u{E0049}`: how a hidden character is shown, everywhere (upper-case hex, at least four digits). */
export function escapedCodePoint(codePoint: number): string {
  return `\\u{${codePoint.toString(16).toUpperCase().padStart(4, '0')}}`;
}

/** Every hidden code point of the text, in order of appearance, each once. */
export function hiddenCharactersIn(text: string): number[] {
  if (!CANDIDATE.test(text)) return [];
  const found = new Set<number>();
  const codePoints = codePointsOf(text);
  for (let index = 0; index < codePoints.length; index++) {
    const codePoint = codePoints[index]!;
    if (isHidden(codePoint, codePoints[index + 1], false)) found.add(codePoint);
  }
  return [...found];
}

export function hasHiddenCharacters(text: string): boolean {
  return hiddenCharactersIn(text).length > 0;
}

/**
 * The text as it may be shown to a person: every hidden character replaced by its `\u{…}` escape, everything
 * else as it is. `singleLine` escapes line breaks and tabs too (names, one-line labels). The flag to show beside
 * it is `hasHiddenCharacters` of the original text; a backslash in the text is not escaped, so a literal
 * `\u{…}` in a description reads the same (the flag tells them apart).
 */
export function escapeHiddenCharacters(text: string, options: { singleLine?: boolean } = {}): string {
  const singleLine = options.singleLine === true;
  if (!CANDIDATE.test(text) && !(singleLine && /[\t\n\r]/.test(text))) return text;
  const codePoints = codePointsOf(text);
  let out = '';
  for (let index = 0; index < codePoints.length; index++) {
    const codePoint = codePoints[index]!;
    out += isHidden(codePoint, codePoints[index + 1], singleLine) ? escapedCodePoint(codePoint) : String.fromCodePoint(codePoint);
  }
  return out;
}

/** Code points, an unpaired surrogate counting as one (for...of yields it alone). */
function codePointsOf(text: string): number[] {
  const codePoints: number[] = [];
  for (const character of text) codePoints.push(character.codePointAt(0)!);
  return codePoints;
}

/** Length in Unicode code points, without building an array. */
export function codePointLength(text: string): number {
  let length = 0;
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    if (unit >= 0xd800 && unit <= 0xdbff && index + 1 < text.length) {
      const low = text.charCodeAt(index + 1);
      if (low >= 0xdc00 && low <= 0xdfff) index++;
    }
    length++;
  }
  return length;
}

/**
 * The hidden characters in every string of a JSON value: string values and property names, at any depth
 * (schema descriptions, titles, enum values, property names, patterns, …). Walked without recursion.
 */
export function hiddenCharactersInValue(value: unknown): number[] {
  const found = new Set<number>();
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const current = pending.pop();
    if (typeof current === 'string') {
      for (const codePoint of hiddenCharactersIn(current)) found.add(codePoint);
    } else if (Array.isArray(current)) {
      for (const item of current) pending.push(item);
    } else if (typeof current === 'object' && current !== null) {
      for (const [key, item] of Object.entries(current)) {
        pending.push(key, item);
      }
    }
  }
  return [...found];
}

/** The text a tool shows: each field by the name a reason message uses for it. */
export interface ToolText {
  name?: string | null | undefined;
  operationId?: string | null | undefined;
  path?: string | null | undefined;
  title?: string | null | undefined;
  description?: string | null | undefined;
  /** inputSchema, outputSchema, annotations: every string and property name inside. */
  schemas?: Record<string, unknown>;
}

export interface ToolTextProblem {
  code: ToolTextReasonCode;
  message: string;
}

const LISTED_CHARACTERS = 8;

function listCharacters(codePoints: number[]): string {
  const shown = codePoints.slice(0, LISTED_CHARACTERS).map(escapedCodePoint).join(' ');
  return codePoints.length > LISTED_CHARACTERS ? `${shown} and ${codePoints.length - LISTED_CHARACTERS} more` : shown;
}

/**
 * Why a tool's text cannot be offered, or null: hidden characters in any field first (the stronger signal),
 * then a title or description longer than MAX_DESCRIPTION_LENGTH. The message never holds a hidden character.
 */
export function toolTextProblem(text: ToolText): ToolTextProblem | null {
  const fields: Array<[string, unknown]> = [
    ['name', text.name],
    ['operationId', text.operationId],
    ['path', text.path],
    ['title', text.title],
    ['description', text.description],
    ...Object.entries(text.schemas ?? {}),
  ];
  const hidden: string[] = [];
  for (const [field, value] of fields) {
    if (value === null || value === undefined) continue;
    const found = typeof value === 'string' ? hiddenCharactersIn(value) : hiddenCharactersInValue(value);
    if (found.length > 0) hidden.push(`${field} (${listCharacters(found)})`);
  }
  if (hidden.length > 0) {
    return {
      code: 'TOOL_TEXT_HIDDEN_CHARACTERS',
      message:
        `The tool's text holds invisible, tag or bidirectional control characters a reviewer cannot see but a model reads: ` +
        `${hidden.join(', ')}.`,
    };
  }
  for (const [field, value] of [
    ['title', text.title],
    ['description', text.description],
  ] as const) {
    if (typeof value === 'string' && value.length > MAX_DESCRIPTION_LENGTH) {
      const length = codePointLength(value);
      if (length > MAX_DESCRIPTION_LENGTH) {
        return {
          code: 'TOOL_DESCRIPTION_TOO_LONG',
          message: `The tool's ${field} is ${length} characters long, more than the ${MAX_DESCRIPTION_LENGTH} a tool may show a model.`,
        };
      }
    }
  }
  return null;
}

/**
 * JSON text with every hidden character inside its strings written as a `\uXXXX` escape (a surrogate pair for
 * one beyond U+FFFF): the same JSON value, byte for byte safe to print. JSON.stringify leaves such characters raw.
 */
export function escapeHiddenCharactersInJson(json: string): string {
  if (!CANDIDATE.test(json)) return json;
  const codePoints = codePointsOf(json);
  let out = '';
  for (let index = 0; index < codePoints.length; index++) {
    const codePoint = codePoints[index]!;
    const character = String.fromCodePoint(codePoint);
    // Outside strings JSON holds only line feeds and spaces; inside, JSON.stringify escaped every C0 control.
    if (!isHidden(codePoint, codePoints[index + 1], false)) {
      out += character;
      continue;
    }
    for (let unit = 0; unit < character.length; unit++) {
      out += `\\u${character.charCodeAt(unit).toString(16).toUpperCase().padStart(4, '0')}`;
    }
  }
  return out;
}

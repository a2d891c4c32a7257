import { GatewayError, type BodyEncoding, type OperationBody, type OperationParameter } from '@gateway/core';

/**
 * Parameter and body serialisation per OpenAPI 3.x "Style Values" and "Style Examples"
 * (OAS 3.1.1 §4.8.12.4, OAS 3.2.0 Parameter Object), which follow RFC 6570 URI templates:
 * `simple` ≈ `{x}`, `label` ≈ `{.x}`, `matrix` ≈ `{;x}`, `form` ≈ `{?x}`; plus the OpenAPI-only
 * `spaceDelimited`, `pipeDelimited` and `deepObject` query styles.
 */

type Pair = readonly [name: string, value: unknown];

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The text of one primitive value. Nested structures have no standard style, so they go as JSON. */
function text(value: unknown): string {
  if (value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** RFC 3986 §2.3: everything but the unreserved characters is percent-encoded. */
export function encodeStrict(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (character) => `%${character.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * `allowReserved: true` (OAS Parameter Object): RFC 3986 reserved characters pass unencoded — those a
 * query may contain (RFC 3986 §3.4: pchar / "/" / "?"), so `#`, `[` and `]` are still encoded — and
 * existing `%XX` escapes are kept.
 */
function encodeAllowingReserved(value: string): string {
  let output = '';
  for (let index = 0; index < value.length; index += 1) {
    const character = value[index]!;
    if (/[A-Za-z0-9\-._~:/?@!$&'()*+,;=]/.test(character)) output += character;
    else if (character === '%' && /^[0-9A-Fa-f]{2}$/.test(value.slice(index + 1, index + 3))) output += character;
    else {
      const codePoint = value.codePointAt(index)!;
      const whole = String.fromCodePoint(codePoint);
      output += encodeURIComponent(whole);
      index += whole.length - 1;
    }
  }
  return output;
}

/**
 * The one rule for values a serialisation drops: an array or object (`[]`, `{}`, `{"a": []}`) whose serialisation is
 * nothing at all — no query or form pair, an empty header value, no cookie pair. (Styles that send an empty array
 * as `name=`, such as `form` without `explode`, keep it, as the OAS style table says.) Such a value is omitted when
 * it is optional, like an absent argument; when the operation requires it, `droppedRequiredValue` refuses the call
 * before any request (docs/request-fidelity.md).
 */
export function sendsNothing(value: unknown, serialised: readonly unknown[] | string): boolean {
  return typeof value === 'object' && value !== null && serialised.length === 0;
}

/** ARGUMENT_REQUIRED_EMPTY: an argument error (category `usage`), so the call ends as invalid arguments. */
export function droppedRequiredValue(argument: string, value: unknown, where: string): GatewayError {
  return new GatewayError(
    'ARGUMENT_REQUIRED_EMPTY',
    `argument '${argument}' is required, but its value ${JSON.stringify(value)} would be sent as nothing ${where} (an empty ` +
      'array or object has no serialisation there): give it at least one element; nothing was sent',
    { details: { argument } },
  );
}

function entriesOf(value: Record<string, unknown>): Pair[] {
  return Object.entries(value).filter(([, item]) => item !== undefined);
}

/** The value as the parameter's `content` media type serialises it (OAS: `content` instead of `schema`). */
function contentText(parameter: OperationParameter, value: unknown): string {
  const mediaType = (parameter.contentType ?? '').toLowerCase();
  if (mediaType === 'application/json' || mediaType.endsWith('+json')) return JSON.stringify(value);
  return text(value);
}

/** `simple`, `label` and `matrix` for path parameters; the result is already percent-encoded. */
export function serialisePathValue(parameter: OperationParameter, value: unknown): string {
  const encode = encodeStrict;
  if (parameter.contentType) return encode(contentText(parameter, value));
  const name = encode(parameter.name);
  const style = parameter.style || 'simple';
  const explode = parameter.explode;
  if (style === 'label') {
    if (Array.isArray(value)) return `.${value.map((item) => encode(text(item))).join(explode ? '.' : ',')}`;
    if (isPlainObject(value)) {
      const entries = entriesOf(value);
      return explode
        ? `.${entries.map(([key, item]) => `${encode(key)}=${encode(text(item))}`).join('.')}`
        : `.${entries.flatMap(([key, item]) => [encode(key), encode(text(item))]).join(',')}`;
    }
    return `.${encode(text(value))}`;
  }
  if (style === 'matrix') {
    if (Array.isArray(value)) {
      if (value.length === 0) return `;${name}`;
      return explode
        ? value.map((item) => `;${name}=${encode(text(item))}`).join('')
        : `;${name}=${value.map((item) => encode(text(item))).join(',')}`;
    }
    if (isPlainObject(value)) {
      const entries = entriesOf(value);
      return explode
        ? entries.map(([key, item]) => `;${encode(key)}=${encode(text(item))}`).join('')
        : `;${name}=${entries.flatMap(([key, item]) => [encode(key), encode(text(item))]).join(',')}`;
    }
    return value === '' ? `;${name}` : `;${name}=${encode(text(value))}`;
  }
  if (style !== 'simple') throw unsupportedStyle(parameter);
  return simple(value, explode, encode);
}

function simple(value: unknown, explode: boolean, encode: (value: string) => string): string {
  if (Array.isArray(value)) return value.map((item) => encode(text(item))).join(',');
  if (isPlainObject(value)) {
    const entries = entriesOf(value);
    return explode
      ? entries.map(([key, item]) => `${encode(key)}=${encode(text(item))}`).join(',')
      : entries.flatMap(([key, item]) => [encode(key), encode(text(item))]).join(',');
  }
  return encode(text(value));
}

/**
 * `deepObject` beyond flat objects, which OpenAPI leaves undefined: the bracket convention of qs, Rails, PHP and
 * Stripe. A scalar is `name=value` (Stripe's `created=5`); an object nests `name[key]` (`created[gt]=5`,
 * `metadata[a][b]=v`); an array of scalars repeats `name[]` (`expand[]=a&expand[]=b`); an array holding objects
 * or arrays is indexed, `name[0][price]=p`; `null` is `name=` and empty arrays and objects send nothing.
 * Keys are percent-encoded, brackets kept literal; values are returned as text, not yet encoded.
 */
export function deepObjectPairs(encodedName: string, value: unknown): Array<[string, string]> {
  if (Array.isArray(value)) {
    const isFlat = value.every((item) => typeof item !== 'object' || item === null);
    if (isFlat) return value.map((item) => [`${encodedName}[]`, text(item)]);
    return value.flatMap((item, index) => deepObjectPairs(`${encodedName}[${index}]`, item));
  }
  if (isPlainObject(value)) {
    return entriesOf(value).flatMap(([key, item]) => deepObjectPairs(`${encodedName}[${encodeStrict(key)}]`, item));
  }
  return [[encodedName, text(value)]];
}

/** Query pairs (already percent-encoded `name=value` strings) for one `in: query` parameter. */
export function serialiseQueryValue(parameter: OperationParameter, value: unknown): string[] {
  const encodeValue = parameter.allowReserved ? encodeAllowingReserved : encodeStrict;
  const name = encodeStrict(parameter.name);
  if (parameter.contentType) return [`${name}=${encodeStrict(contentText(parameter, value))}`];
  const style = parameter.style || 'form';
  const explode = parameter.explode;
  if (style === 'deepObject') {
    return deepObjectPairs(name, value).map(([key, item]) => `${key}=${encodeValue(item)}`);
  }
  if (style === 'spaceDelimited' || style === 'pipeDelimited') {
    const separator = style === 'spaceDelimited' ? '%20' : '%7C';
    if (Array.isArray(value)) {
      if (explode) return value.map((item) => `${name}=${encodeValue(text(item))}`);
      return [`${name}=${value.map((item) => encodeValue(text(item))).join(separator)}`];
    }
    if (isPlainObject(value)) {
      const entries = entriesOf(value);
      if (explode) return entries.map(([key, item]) => `${encodeStrict(key)}=${encodeValue(text(item))}`);
      return [`${name}=${entries.flatMap(([key, item]) => [encodeStrict(key), encodeValue(text(item))]).join(separator)}`];
    }
    return [`${name}=${encodeValue(text(value))}`];
  }
  if (style !== 'form') throw unsupportedStyle(parameter);
  if (Array.isArray(value)) {
    if (explode) return value.map((item) => `${name}=${encodeValue(text(item))}`);
    return [`${name}=${value.map((item) => encodeValue(text(item))).join(',')}`];
  }
  if (isPlainObject(value)) {
    const entries = entriesOf(value);
    if (explode) return entries.map(([key, item]) => `${encodeStrict(key)}=${encodeValue(text(item))}`);
    return [`${name}=${entries.flatMap(([key, item]) => [encodeStrict(key), encodeValue(text(item))]).join(',')}`];
  }
  return [`${name}=${encodeValue(text(value))}`];
}

/**
 * OAS 3.2 `in: querystring`: the whole query string from one value, serialised by its `content` media type
 * (form-urlencoded objects become pairs; anything else is percent-encoded as one string).
 */
export function serialiseQueryString(parameter: OperationParameter, value: unknown, requiredKeys: readonly string[] = []): string[] {
  const mediaType = (parameter.contentType ?? 'application/x-www-form-urlencoded').toLowerCase();
  if (mediaType === 'application/x-www-form-urlencoded') {
    if (!isPlainObject(value)) return [encodeStrict(text(value))];
    return defaultFormPairs(value, requiredKeys, parameter.argument, 'in the query string').map(
      ([key, item]) => `${encodeStrict(key)}=${encodeStrict(item)}`,
    );
  }
  return [encodeStrict(contentText(parameter, value))];
}

/** Header values use `simple` with no percent-encoding (OAS: header parameters are `simple` only). */
export function serialiseHeaderValue(parameter: OperationParameter, value: unknown): string {
  const serialised = parameter.contentType ? contentText(parameter, value) : simple(value, parameter.explode, (item) => item);
  // RFC 9110 §5.5: field values are visible ASCII, space and tab; CR/LF would split the header.
  if (!/^[\t\x20-\x7e]*$/.test(serialised)) {
    throw new GatewayError(
      'HEADER_VALUE_INVALID',
      `header parameter '${parameter.name}' contains characters an HTTP header cannot carry (control or non-ASCII characters)`,
      { details: { parameter: parameter.name } },
    );
  }
  return serialised;
}

/** Cookie parameters: `form` style, `name=value` (OAS 3.2 also names this `cookie`); values percent-encoded. */
export function serialiseCookieValue(parameter: OperationParameter, value: unknown): string {
  const name = parameter.name;
  if (parameter.contentType) return `${name}=${encodeStrict(contentText(parameter, value))}`;
  if (Array.isArray(value)) {
    return parameter.explode
      ? value.map((item) => `${name}=${encodeStrict(text(item))}`).join('; ')
      : `${name}=${value.map((item) => encodeStrict(text(item))).join(',')}`;
  }
  if (isPlainObject(value)) {
    const entries = entriesOf(value);
    return parameter.explode
      ? entries.map(([key, item]) => `${key}=${encodeStrict(text(item))}`).join('; ')
      : `${name}=${entries.flatMap(([key, item]) => [encodeStrict(key), encodeStrict(text(item))]).join(',')}`;
  }
  return `${name}=${encodeStrict(text(value))}`;
}

function formPairs(value: Record<string, unknown>): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  for (const [key, item] of entriesOf(value)) {
    if (Array.isArray(item)) for (const element of item) pairs.push([key, text(element)]);
    else pairs.push([key, text(item)]);
  }
  return pairs;
}

/** The default form serialisation (arrays repeat the key), refusing a required property it would send as nothing. */
function defaultFormPairs(
  value: Record<string, unknown>,
  requiredKeys: readonly string[],
  argument: string,
  where: string,
): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  for (const [key, item] of entriesOf(value)) {
    const own = formPairs({ [key]: item });
    if (sendsNothing(item, own) && requiredKeys.includes(key)) throw droppedRequiredValue(`${argument}.${key}`, item, where);
    pairs.push(...own);
  }
  return pairs;
}

/** A request body and its `Content-Type`. */
export interface EncodedBody {
  contentType: string;
  payload: string;
}

/**
 * The body in its declared media type: JSON (`application/json`, `*+json`), form-urlencoded (OAS default
 * encoding: `form`, exploded; arrays repeat the key, objects go as JSON) and plain text.
 */
export function encodeBody(body: OperationBody, value: unknown, requiredKeys: readonly string[] = []): EncodedBody {
  // A wildcard media type (`*/*`) with a JSON schema: the importer recorded the type actually sent.
  const mediaType = (body.sendAs ?? body.mediaType).split(';')[0]!.trim().toLowerCase();
  if (mediaType === 'application/json' || mediaType.endsWith('+json')) {
    return { contentType: body.sendAs ?? body.mediaType, payload: JSON.stringify(value) };
  }
  if (mediaType === 'application/x-www-form-urlencoded') {
    if (!isPlainObject(value)) {
      throw new GatewayError('BODY_ENCODING_FAILED', 'a form-urlencoded body needs an object argument');
    }
    if (body.encoding) {
      return { contentType: body.mediaType, payload: encodedFormPairs(value, body.encoding, requiredKeys, body.argument).join('&') };
    }
    const form = new URLSearchParams();
    for (const [key, item] of defaultFormPairs(value, requiredKeys, body.argument, 'in the form body')) form.append(key, item);
    return { contentType: body.mediaType, payload: form.toString() };
  }
  if (mediaType.startsWith('text/')) {
    return { contentType: mediaType === 'text/plain' ? 'text/plain; charset=utf-8' : body.mediaType, payload: text(value) };
  }
  throw new GatewayError(
    'BODY_MEDIA_TYPE_UNSUPPORTED',
    `request bodies of type ${body.mediaType} cannot be sent (supported: JSON, form-urlencoded, text)`,
    { details: { mediaType: body.mediaType } },
  );
}

/**
 * A form body whose media type declares `encoding` (OAS 3.x Encoding Object): each property as its entry says,
 * like a query parameter of that style; properties without an entry keep the default (arrays repeat the key,
 * objects go as JSON text). Returns encoded `key=value` pairs.
 */
function encodedFormPairs(
  value: Record<string, unknown>,
  encoding: Record<string, BodyEncoding>,
  requiredKeys: readonly string[],
  argument: string,
): string[] {
  const pairs: string[] = [];
  for (const [key, item] of entriesOf(value)) {
    const entry = Object.hasOwn(encoding, key) ? encoding[key] : undefined;
    if (!entry) {
      for (const [name, itemText] of defaultFormPairs({ [key]: item }, requiredKeys, argument, 'in the form body')) {
        pairs.push(`${encodeStrict(name)}=${encodeStrict(itemText)}`);
      }
      continue;
    }
    const parameter: OperationParameter = {
      name: key,
      in: 'query',
      argument: key,
      required: false,
      style: entry.style,
      explode: entry.explode,
      allowReserved: entry.allowReserved,
      ...(entry.contentType ? { contentType: entry.contentType } : {}),
    };
    const own = serialiseQueryValue(parameter, item);
    if (sendsNothing(item, own) && requiredKeys.includes(key)) throw droppedRequiredValue(`${argument}.${key}`, item, 'in the form body');
    pairs.push(...own);
  }
  return pairs;
}

function unsupportedStyle(parameter: OperationParameter, why?: string): GatewayError {
  return new GatewayError(
    'PARAMETER_STYLE_UNSUPPORTED',
    `parameter '${parameter.name}' (in ${parameter.in}) uses style '${parameter.style}'${why ? `: ${why}` : ''}, which cannot be ` +
      `serialised here`,
    { details: { parameter: parameter.name, in: parameter.in, style: parameter.style } },
  );
}

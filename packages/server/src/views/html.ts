/**
 * HTML built by the `html` tagged template: every interpolated value is escaped unless it is already markup
 * (`SafeHtml`, made by `html` itself or, for text a view escaped by other means, by `raw`). A page is assembled
 * from pieces that are each safe, so no view concatenates unescaped text into markup by mistake.
 */

/** Markup that may be placed into a page as it is. */
export class SafeHtml {
  constructor(readonly text: string) {}

  toString(): string {
    return this.text;
  }
}

/** What a template may interpolate: text (escaped), markup, nothing (`''` for null, undefined, false), or a list of those. */
export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[];

/** Text for an HTML text node or a quoted attribute value: `& < > " '` as numeric character references. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

/** Markup the caller vouches for: already escaped, or written as a constant. */
export function raw(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

function render(value: HtmlValue): string {
  if (value instanceof SafeHtml) return value.text;
  if (value === null || value === undefined || value === false || value === true) return '';
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return escapeHtml(value);
  return value.map(render).join('');
}

/** The tagged template: `html\`<p>${name}</p>\`` escapes `name`; lists are joined with nothing between. */
export function html(strings: TemplateStringsArray, ...values: readonly HtmlValue[]): SafeHtml {
  let text = strings[0]!;
  for (let index = 0; index < values.length; index += 1) text += render(values[index]!) + strings[index + 1]!;
  return new SafeHtml(text);
}

/** Items joined with a separator (a newline between options, `', '` between names). */
export function joinHtml(items: readonly HtmlValue[], separator: string): SafeHtml {
  return new SafeHtml(items.map(render).join(escapeHtml(separator)));
}

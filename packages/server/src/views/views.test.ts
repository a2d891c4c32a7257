import { describe, expect, it } from 'vitest';
import { badge, csrfField, html, joinHtml, navigation, postForm, raw, renderPage, table, CONSOLE_STYLE, PAGE_STYLE } from './index.js';

const HOSTILE = `"><script>alert('x')</script>&`;
const ESCAPED = '&#34;&#62;&#60;script&#62;alert(&#39;x&#39;)&#60;/script&#62;&#38;';

describe('html escaping', () => {
  it('escapes every interpolated text, in text and in attribute values', () => {
    expect(html`<p title="${HOSTILE}">${HOSTILE}</p>`.text).toBe(`<p title="${ESCAPED}">${ESCAPED}</p>`);
  });

  it('places markup made by html or raw as it is, and lists joined with nothing between', () => {
    const item = (text: string) => html`<li>${text}</li>`;
    expect(html`<ul>${['a', '<b>'].map(item)}${raw('<li>c</li>')}</ul>`.text).toBe('<ul><li>a</li><li>&#60;b&#62;</li><li>c</li></ul>');
  });

  it('renders null, undefined and false as nothing, numbers as digits', () => {
    expect(html`[${null}${undefined}${false}${0}${42}]`.text).toBe('[042]');
  });

  it('joinHtml escapes the items and puts the separator between them', () => {
    expect(joinHtml(['<a>', html`<b>`], ', ').text).toBe('&#60;a&#62;, <b>');
  });
});

describe('the page layout', () => {
  it('names one fresh nonce in the CSP, the style and the script, and escapes the title', () => {
    const page = renderPage(HOSTILE, html`<p>body</p>`, { script: 'void 0;', formTargets: ['https://client.example'] });
    const nonce = /style-src 'nonce-([^']+)'/.exec(page.headers['content-security-policy']!)![1]!;
    expect(page.html).toContain(`<style nonce="${nonce}">`);
    expect(page.html).toContain(`<script nonce="${nonce}">void 0;</script>`);
    expect(page.html).toContain(`<title>${ESCAPED}</title>`);
    expect(page.headers['content-security-policy']).toContain("form-action 'self' https://client.example");
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.headers).toMatchObject({ 'x-frame-options': 'DENY', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' });
    expect(renderPage('t', html``).headers['content-security-policy']).not.toContain(nonce);
  });

  it('inlines the page sheet by default and the sheets asked for otherwise, with the header before <main>', () => {
    expect(renderPage('t', html``).html).toContain(PAGE_STYLE);
    const framed = renderPage('t', html`x`, {
      styles: [PAGE_STYLE, CONSOLE_STYLE],
      header: navigation('Console', [{ href: '/console/sessions', label: 'Sessions' }], '/console/sessions'),
      mainClass: 'wide',
    });
    expect(framed.html).toContain(CONSOLE_STYLE);
    expect(framed.html).toMatch(/<nav class="site" aria-label="Console">.*<\/nav>\n<main class="wide">/);
    expect(framed.status).toBe(200);
  });
});

describe('forms and components', () => {
  it('every post form carries the CSRF token first, escaped', () => {
    expect(csrfField(HOSTILE).text).toBe(`<input type="hidden" name="csrf_token" value="${ESCAPED}">`);
    const form = postForm('sessions/s-1/revoke', 't', html`<button>Revoke</button>`).text;
    const field = '<input type="hidden" name="csrf_token" value="t">';
    expect(form).toBe(`<form method="post" action="sessions/s-1/revoke">\n${field}\n<button>Revoke</button>\n</form>`);
  });

  it('marks the current page in the navigation and escapes labels', () => {
    const nav = navigation(
      'Console',
      [
        { href: '/a', label: 'A<' },
        { href: '/b', label: 'B' },
      ],
      '/b',
    ).text;
    expect(nav).toContain('<a href="/a">A&#60;</a>');
    expect(nav).toContain('<a href="/b" aria-current="page">B</a>');
  });

  it('a table escapes its cells, labels each for narrow screens, and shows the empty text without rows', () => {
    const columns = [
      { label: 'Name', cell: (row: { name: string }) => row.name },
      { label: 'State', cell: () => badge('paused', 'warn') },
    ];
    const rendered = table('Webhooks', columns, [{ name: HOSTILE }], 'none').text;
    expect(rendered).toContain(`<td data-label="Name">${ESCAPED}</td>`);
    expect(rendered).toContain('<td data-label="State"><span class="badge warn">paused</span></td>');
    expect(rendered).toContain('<th scope="col">Name</th>');
    expect(table('Webhooks', columns, [], 'No <endpoint>').text).toBe('<p class="hint">No &#60;endpoint&#62;</p>');
  });
});

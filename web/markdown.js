// A small Markdown renderer for the model's replies: paragraphs, line breaks,
// **bold**, *italic*, `code`, fenced code blocks, lists, headings, quotes and rules.
// Safety by construction: every piece of the text is HTML-escaped before it is placed
// between tags this file writes, and the only attributes written are a code block's
// language (letters, digits, + - _ only) and an ordered list's start (digits), so the
// model's text never becomes markup. No links or images: a reply cannot make the page
// fetch anything. Pure functions (no DOM): tests/web/markdown.test.mjs runs them in Node.

const kEscapes = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => kEscapes[c]);
}

// Emphasis inside text that has no code spans; `s` is already escaped (escaping leaves
// * and _ alone). Underscores count only at word edges, so snake_case stays as it is.
function emphasis(s) {
  return s
    .replace(/\*\*(?=\S)(.*?\S)\*\*/g, '<strong>$1</strong>')
    .replace(/(^|[^\w])__(?=\S)(.*?\S)__(?!\w)/g, '$1<strong>$2</strong>')
    .replace(/\*(?=[^\s*])([^*]*?[^\s*])\*/g, '<em>$1</em>')
    .replace(/(^|[^\w])_(?=[^\s_])(.*?[^\s_])_(?!\w)/g, '$1<em>$2</em>');
}

// One line (or paragraph) of inline Markdown -> HTML. Code spans first: their content
// is shown as is (escaped), with no emphasis inside.
export function renderInline(text) {
  let html = '';
  let rest = String(text);
  for (;;) {
    const open = /`+/.exec(rest);
    if (!open) break;
    const close = rest.indexOf(open[0], open.index + open[0].length);
    if (close < 0) break;
    html += emphasis(escapeHtml(rest.slice(0, open.index)));
    const code = rest.slice(open.index + open[0].length, close);
    html += `<code>${escapeHtml(code.length > 2 && code.startsWith(' ') && code.endsWith(' ') ? code.slice(1, -1) : code)}</code>`;
    rest = rest.slice(close + open[0].length);
  }
  return html + emphasis(escapeHtml(rest));
}

const kFence = /^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)[^`]*$/;
const kHeading = /^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/;
const kBullet = /^ {0,3}[-*+]\s+(.*)$/;
const kNumbered = /^ {0,3}(\d{1,9})[.)]\s+(.*)$/;
const kRule = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const kQuote = /^ {0,3}>\s?(.*)$/;

// Markdown text -> an HTML string (block elements, no newlines between them).
// Unfinished input (a reply still streaming) renders as far as it goes: an open
// fence is a code block to the end.
export function renderMarkdown(text) {
  const lines = String(text).replace(/\r\n?/g, '\n').split('\n');
  const out = [];
  let paragraph = [];
  let list = null; // { tag, start, items: [string lines] }

  const flushParagraph = () => {
    if (paragraph.length) out.push(`<p>${paragraph.map(renderInline).join('<br>')}</p>`);
    paragraph = [];
  };
  const flushList = () => {
    if (!list) return;
    const start = list.tag === 'ol' && list.start !== 1 ? ` start="${list.start}"` : '';
    const items = list.items.map((item) => `<li>${item.map(renderInline).join('<br>')}</li>`).join('');
    out.push(`<${list.tag}${start}>${items}</${list.tag}>`);
    list = null;
  };
  const flush = () => {
    flushParagraph();
    flushList();
  };

  for (let i = 0; i < lines.length; ++i) {
    const line = lines[i];
    const fence = kFence.exec(line);
    if (fence) {
      flush();
      const marker = fence[1];
      const body = [];
      for (++i; i < lines.length; ++i) {
        if (new RegExp(`^ {0,3}${marker[0] === '`' ? '`' : '~'}{${marker.length},}\\s*$`).test(lines[i])) break;
        body.push(lines[i]);
      }
      const lang = fence[2] ? ` class="language-${escapeHtml(fence[2])}"` : '';
      out.push(`<pre><code${lang}>${escapeHtml(body.join('\n'))}</code></pre>`);
      continue;
    }
    if (line.trim() === '') {
      flush();
      continue;
    }
    const heading = kHeading.exec(line);
    if (heading) {
      flush();
      const level = heading[1].length;
      out.push(`<h${level}>${renderInline(heading[2])}</h${level}>`);
      continue;
    }
    if (kRule.test(line)) {
      flush();
      out.push('<hr>');
      continue;
    }
    const bullet = kBullet.exec(line);
    const numbered = bullet ? null : kNumbered.exec(line);
    if (bullet || numbered) {
      flushParagraph();
      const tag = bullet ? 'ul' : 'ol';
      if (list && list.tag !== tag) flushList();
      if (!list) list = { tag, start: numbered ? Number(numbered[1]) : 1, items: [] };
      list.items.push([bullet ? bullet[1] : numbered[2]]);
      continue;
    }
    if (list && /^\s/.test(line)) {
      list.items.at(-1).push(line.trim()); // an indented line continues the item
      continue;
    }
    const quote = kQuote.exec(line);
    if (quote) {
      flush();
      const body = [quote[1]];
      while (i + 1 < lines.length && kQuote.test(lines[i + 1])) body.push(kQuote.exec(lines[++i])[1]);
      out.push(`<blockquote>${renderMarkdown(body.join('\n'))}</blockquote>`);
      continue;
    }
    flushList();
    paragraph.push(line);
  }
  flush();
  return out.join('');
}

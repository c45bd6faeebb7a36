// The demo page's Markdown renderer (web/markdown.js) in Node: what each construct
// becomes, and that the model's text never becomes markup (the page shows replies with
// innerHTML = renderMarkdown(reply)). tests/web/demo_page.test.mjs checks the page
// renders it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { escapeHtml, renderInline, renderMarkdown } from '../../web/markdown.js';

describe('renderMarkdown', () => {
  test('paragraphs and line breaks', () => {
    assert.equal(renderMarkdown('one\ntwo\n\nthree'), '<p>one<br>two</p><p>three</p>');
    assert.equal(renderMarkdown('a\r\nb'), '<p>a<br>b</p>');
    assert.equal(renderMarkdown(''), '');
  });

  test('bold, italic and code spans', () => {
    assert.equal(renderInline('**bold** and *italic* and __b__ and _i_'),
      '<strong>bold</strong> and <em>italic</em> and <strong>b</strong> and <em>i</em>');
    assert.equal(renderInline('**a *b* c**'), '<strong>a <em>b</em> c</strong>');
    assert.equal(renderInline('`x = *y*` and ``a`b``'), '<code>x = *y*</code> and <code>a`b</code>');
    // Not emphasis: snake_case, lone stars, 2 * 3 * 4, an unclosed code span.
    assert.equal(renderInline('snake_case_name and 2 * 3 * 4'), 'snake_case_name and 2 * 3 * 4');
    assert.equal(renderInline('an `open span'), 'an `open span');
  });

  test('fenced code blocks keep their text as is', () => {
    assert.equal(renderMarkdown('Code:\n```python\ndef f(x):\n    return x * 2  # **not bold**\n```\nafter'),
      '<p>Code:</p><pre><code class="language-python">def f(x):\n    return x * 2  # **not bold**</code></pre>' +
      '<p>after</p>');
    assert.equal(renderMarkdown('~~~\n<b>\n~~~'), '<pre><code>&lt;b&gt;</code></pre>');
    // A reply still streaming: an open fence runs to the end.
    assert.equal(renderMarkdown('```js\nlet a = 1;'), '<pre><code class="language-js">let a = 1;</code></pre>');
  });

  test('lists, headings, quotes, rules', () => {
    assert.equal(renderMarkdown('- red\n- *green*\n* blue'), '<ul><li>red</li><li><em>green</em></li><li>blue</li></ul>');
    assert.equal(renderMarkdown('Steps:\n1. one\n2. two\n   more\n\n3) three'),
      '<p>Steps:</p><ol><li>one</li><li>two<br>more</li></ol><ol start="3"><li>three</li></ol>');
    assert.equal(renderMarkdown('# Title\n### Sub **bold** ###\ntext'),
      '<h1>Title</h1><h3>Sub <strong>bold</strong></h3><p>text</p>');
    assert.equal(renderMarkdown('#hashtag'), '<p>#hashtag</p>');
    assert.equal(renderMarkdown('> quoted\n> *more*\n\n---'), '<blockquote><p>quoted<br><em>more</em></p></blockquote><hr>');
  });

  test('the model\'s text never becomes markup', () => {
    const attacks = [
      '<img src=x onerror="alert(1)">',
      '<script>alert(1)</script>',
      '**<img src=x onerror=alert(1)>**',
      '`<script>`',
      '```"><img src=x onerror=alert(1)>\n<script>x</script>\n```',
      '```js" onmouseover="alert(1)\ncode\n```',
      '# <iframe src=javascript:alert(1)>',
      '- <a href="javascript:alert(1)">x</a>',
      '1. <svg onload=alert(1)>',
      '> <style>body{display:none}</style>',
      '[link](javascript:alert(1)) ![img](http://x/y.png)',
      '&lt;already escaped&gt; & "quotes" \'single\'',
    ];
    for (const text of attacks) {
      const html = renderMarkdown(text);
      // Only the renderer's own tags, and no attribute but class="language-…" / start.
      for (const tag of html.match(/<[^>]*>/g) ?? []) {
        assert.match(tag, /^<\/?(p|br|strong|em|code|pre|ul|ol|li|h[1-6]|blockquote|hr)( class="language-[\w+-]+"| start="\d+")?>$/,
          `${JSON.stringify(text)} gave the tag ${tag}`);
      }
      assert.ok(!/<(img|script|iframe|a|svg|style)\b/i.test(html), html);
    }
    assert.equal(renderMarkdown('<img src=x onerror="alert(1)">'), '<p>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</p>');
    assert.equal(renderMarkdown('```"><img src=x>\nx\n```'), '<pre><code>x</code></pre>');
    assert.equal(escapeHtml('&<>"\''), '&amp;&lt;&gt;&quot;&#39;');
  });
});

import { parseHtml } from './html';
import { loadContent } from './load';
import { detectMimeType, MIME_HTML } from './mime';

const page = `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>  Benefits &amp; Perks | Intranet </title>
  <style>body { color: red }</style>
  <script>var tracking = "should not appear";</script>
</head>
<body>
  <header><a href="/">Logo</a> <span>Site header text</span></header>
  <nav><ul><li>Home</li><li>About</li></ul></nav>
  <main>
    <article>
      <header><h1>Employee Benefits</h1></header>
      <p>All staff are   eligible
         for <b>health</b> insurance.<br>Dental is optional.</p>
      <div>Loose text in a div <span>with a span</span>.
        <p>A nested paragraph.</p>
        trailing text
      </div>
      <h2>Coverage</h2>
      <ul>
        <li>Medical</li>
        <li>Vision <ul><li>Glasses</li><li>Contacts</li></ul></li>
      </ul>
      <ol><li>Enroll</li><li>Confirm</li></ol>
      <table>
        <caption>Plan costs</caption>
        <thead><tr><th>Plan</th><th>Monthly</th></tr></thead>
        <tbody>
          <tr><td>Basic</td><td>€20</td></tr>
          <tr><td>Plus <script>x()</script></td><td>€35</td></tr>
        </tbody>
      </table>
      <pre><code class="language-bash">curl -s https://hr.example/api \\
  | jq '.plans[] | select(.cost &lt; 30)'</code></pre>
      <noscript>Enable JavaScript</noscript>
      <div hidden>secret hidden text</div>
      <p>中文段落
      继续。</p>
    </article>
  </main>
  <footer>Copyright footer</footer>
</body>
</html>`;

describe('HTML loading', () => {
  it('drops scripts, styles and page chrome and maps elements to blocks', () => {
    const { blocks, title } = parseHtml(page);
    expect(title).toBe('Benefits & Perks | Intranet');
    expect(blocks).toEqual([
      { type: 'heading', level: 1, text: 'Employee Benefits' },
      { type: 'paragraph', text: 'All staff are eligible for health insurance.\nDental is optional.' },
      { type: 'paragraph', text: 'Loose text in a div with a span.' },
      { type: 'paragraph', text: 'A nested paragraph.' },
      { type: 'paragraph', text: 'trailing text' },
      { type: 'heading', level: 2, text: 'Coverage' },
      { type: 'list', ordered: false, items: ['Medical', 'Vision', 'Glasses', 'Contacts'] },
      { type: 'list', ordered: true, items: ['Enroll', 'Confirm'] },
      {
        type: 'table',
        header: true,
        caption: 'Plan costs',
        rows: [
          ['Plan', 'Monthly'],
          ['Basic', '€20'],
          ['Plus', '€35'],
        ],
      },
      { type: 'code', language: 'bash', text: "curl -s https://hr.example/api \\\n  | jq '.plans[] | select(.cost < 30)'" },
      { type: 'paragraph', text: '中文段落继续。' },
    ]);
    const all = JSON.stringify(blocks);
    for (const noise of ['tracking', 'Site header', 'Home', 'Copyright', 'Enable JavaScript', 'secret', 'color: red']) {
      expect(all).not.toContain(noise);
    }
  });

  it('titles: first heading first, then <title>', async () => {
    const r = await loadContent({ bytes: Buffer.from(page), mimeType: 'text/html; charset=UTF-8' });
    expect(r).toMatchObject({ ok: true, title: 'Employee Benefits' });
    const noHeading = await loadContent({ bytes: Buffer.from('<title>Doc Title</title><p>text</p>'), mimeType: MIME_HTML });
    expect(noHeading).toMatchObject({ ok: true, title: 'Doc Title', blocks: [{ type: 'paragraph', text: 'text' }] });
  });

  it('a table whose first row is all <th> has a header; layout tables become paragraphs', () => {
    const { blocks } = parseHtml(
      '<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>' +
        '<table><tr><td><p>Layout cell one</p></td></tr><tr><td>Layout cell two</td></tr></table>',
    );
    expect(blocks).toEqual([
      { type: 'table', header: true, rows: [['k', 'v'], ['a', '1']] },
      { type: 'paragraph', text: 'Layout cell one' },
      { type: 'paragraph', text: 'Layout cell two' },
    ]);
  });

  it('HTML with only chrome and scripts is empty', async () => {
    const html = '<html><head><title>T</title></head><body><nav>menu</nav><script>1</script></body></html>';
    expect(detectMimeType(undefined, Buffer.from(html))).toBe(MIME_HTML);
    expect(await loadContent({ bytes: Buffer.from(html), mimeType: MIME_HTML })).toEqual({ ok: false, code: 'empty', reason: 'document has no text' });
  });
});

/** The playground at `/`: ask a question, see the answer, its citations and the per-stage timings. */
export const PLAYGROUND_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>RAG playground</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
 body{font:15px/1.5 system-ui,sans-serif;max-width:920px;margin:2rem auto;padding:0 1rem;color:#1d2433}
 h1{font-size:1.4rem} form{display:flex;gap:.5rem} input[type=text]{flex:1;padding:.6rem;font-size:1rem;border:1px solid #aab;border-radius:6px}
 button{padding:.6rem 1.1rem;border:0;border-radius:6px;background:#2956d6;color:#fff;font-size:1rem;cursor:pointer}
 .answer{white-space:pre-wrap;background:#f4f6fb;border-radius:8px;padding:1rem;margin-top:1rem;min-height:2rem}
 .refused{background:#fff4e5} .meta{color:#667;font-size:.85rem;margin-top:.5rem}
 ol{padding-left:1.3rem} li{margin:.5rem 0} .cite{font-size:.9rem} .cite b{color:#2956d6}
 table{border-collapse:collapse;font-size:.85rem;margin-top:.5rem} td{border:1px solid #dde;padding:.2rem .6rem}
 label{font-size:.85rem;color:#445}
</style></head>
<body>
<h1>RAG playground</h1>
<form id="f"><input type="text" id="q" placeholder="Ask a question about your documents" autofocus>
<select id="mode"><option>hybrid</option><option>dense</option><option>keyword</option></select>
<button>Ask</button>
<input type="password" id="key" placeholder="API key (when the server requires one)" autocomplete="off" style="margin-top:.4rem"></form>
<div id="out" class="answer" aria-live="polite"></div>
<div id="meta" class="meta"></div>
<h3>Citations</h3><ol id="cites"></ol>
<h3>Timings (ms)</h3><table id="timings"></table>
<script>
const $ = (id) => document.getElementById(id);
$('key').value = sessionStorage.getItem('rag-key') ?? '';
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));
$('f').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const question = $('q').value.trim(); if (!question) return;
  $('out').textContent = '…'; $('out').className = 'answer'; $('cites').innerHTML = ''; $('timings').innerHTML = ''; $('meta').textContent = '';
  const key = $('key').value.trim(); if (key) sessionStorage.setItem('rag-key', key); else sessionStorage.removeItem('rag-key');
  const res = await fetch('/v1/query', { method: 'POST', headers: { 'content-type': 'application/json', ...(key ? { authorization: 'Bearer ' + key } : {}) },
    body: JSON.stringify({ question, mode: $('mode').value, stream: true }) });
  if (!res.ok) { const e = await res.json().catch(() => ({})); $('out').textContent = 'Error: ' + (e.error?.message ?? res.status); return; }
  const reader = res.body.getReader(); const dec = new TextDecoder(); let buf = ''; let text = '';
  for (;;) {
    const { value, done } = await reader.read(); if (done) break;
    buf += dec.decode(value, { stream: true });
    let i; while ((i = buf.indexOf('\\n\\n')) >= 0) {
      const raw = buf.slice(0, i); buf = buf.slice(i + 2);
      const ev = /^event: (.*)$/m.exec(raw)?.[1]; const data = JSON.parse(/^data: (.*)$/m.exec(raw)?.[1] ?? 'null');
      if (ev === 'delta') { text += data.text; $('out').textContent = text; }
      if (ev === 'error') { $('out').textContent = 'Error: ' + data.error.message; }
      if (ev === 'done') show(data);
    }
  }
});
function show(a) {
  $('out').textContent = a.answer; if (a.refused) $('out').className = 'answer refused';
  $('meta').textContent = (a.refused ? 'refused · ' : '') + (a.degraded.length ? 'degraded: ' + a.degraded.join(', ') + ' · ' : '') + 'trace ' + a.trace_id;
  $('cites').innerHTML = a.citations.map((c) => '<li class="cite"><b>[' + c.ref + '] ' + esc(c.title) + '</b> <small>' + esc(c.document_id) + ' · score ' + c.score.toFixed(4) + '</small><br>' + esc(c.text.slice(0, 400)) + '</li>').join('');
  $('timings').innerHTML = Object.entries(a.timings_ms).map(([k, v]) => '<tr><td>' + esc(k) + '</td><td>' + v + '</td></tr>').join('');
}
</script>
</body></html>`;

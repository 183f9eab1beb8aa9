/**
 * Issue 11 item 4, end to end: the hostile files of the black-box probe, generated here, each end with a clear status
 * while the server keeps serving; metadata over the caps is refused at the API.
 */
import { buildDocx, paragraphsXml } from '../../libs/adapters/src/document-parsers/testing/docx-fixture';
import { buildPdf } from '../../libs/adapters/src/document-parsers/testing/pdf-fixture';
import { api, removeDir, startServer, waitForStatus, type Server } from './harness';

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

/** The probe's 411 KB DOCX whose word/document.xml inflates to 100 MB. */
const docxBomb = () => buildDocx([], { bodyXml: paragraphsXml(100_000_000) });

/** The probe's ~180 KB PDF whose one content stream inflates to 50 MB of text-showing operators. */
function pdfBomb(): Buffer {
  const line = 'BT /F1 12 Tf 72 700 Td (Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod.) Tj ET\n';
  return buildPdf([{ content: line.repeat(Math.ceil(50_000_000 / line.length)) }], { compress: true });
}

/** The probe's 5.9 KB DOCX whose core.xml holds 250k unclosed `<dc:title>`. */
const titleBomb = () =>
  buildDocx([{ kind: 'paragraph', text: 'The quarterly figures are in the appendix.' }], {
    coreXml: `<?xml version="1.0"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">${'<dc:title>'.repeat(250_000)}</cp:coreProperties>`,
  });

/** JSON upload (the anonymous local mode refuses multipart without a key: CSRF). */
function upload(server: Server, id: string, bytes: Buffer, mimeType: string, name: string) {
  return api(server, 'POST', '/v1/documents', { id, content_base64: bytes.toString('base64'), mime_type: mimeType, source: `file:///uploads/${name}` });
}

describe('ingestion limits (embedded platform, default limits)', () => {
  let server: Server;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(async () => {
    await server?.stop();
    removeDir(server.dataDir);
  });

  it('a DOCX inflating to 100 MB of XML is failed from its ZIP directory, naming RAG_MAX_INFLATED_BYTES', async () => {
    const bytes = await docxBomb();
    expect(bytes.length).toBeLessThan(1024 * 1024);
    expect((await upload(server, 'docx-bomb', bytes, DOCX, 'bomb.docx')).status).toBe(202);
    const doc = await waitForStatus(server, 'docx-bomb');
    expect(doc).toMatchObject({ status: 'failed' });
    expect(doc.error).toMatch(/too_large: the document inflates past 64 MiB of XML \(its ZIP directory declares 95\.4 MiB\) \(RAG_MAX_INFLATED_BYTES\)/);
  });

  it('a PDF inflating to 50 MB is failed once its text passes RAG_MAX_TEXT_BYTES, and /healthz answers meanwhile', async () => {
    const bytes = pdfBomb();
    expect(bytes.length).toBeLessThan(1024 * 1024);
    expect((await upload(server, 'pdf-bomb', bytes, 'application/pdf', 'bomb.pdf')).status).toBe(202);
    const doc = await waitForStatus(server, 'pdf-bomb');
    expect(doc).toMatchObject({ status: 'failed' });
    expect(doc.error).toContain('too_large: the document has more than 8 MiB of text (RAG_MAX_TEXT_BYTES)');
    expect((await api(server, 'GET', '/healthz')).status).toBe(200);
  });

  it('a DOCX with 250k unclosed <dc:title> in core.xml loads (linear title scan), titled from its first line', async () => {
    const bytes = await titleBomb();
    expect(bytes.length).toBeLessThan(20_000);
    expect((await upload(server, 'title-bomb', bytes, DOCX, 'q3-report.docx')).status).toBe(202);
    expect(await waitForStatus(server, 'title-bomb')).toMatchObject({ status: 'indexed' });
    const r = await api<{ results: { document_id: string; title: string }[] }>(server, 'POST', '/v1/retrieve', { query: 'quarterly figures appendix', mode: 'keyword' });
    expect(r.body.results[0]).toMatchObject({ document_id: 'title-bomb', title: 'The quarterly figures are in the appendix.' });
  });

  it('metadata over the caps is refused at the API with a 400 that says why', async () => {
    const tenThousand = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`key${i}`, `value ${i} `.repeat(5)]));
    const json = await api<{ error: { code: string; message: string } }>(server, 'POST', '/v1/documents', { text: 'Hello.', metadata: tenThousand });
    expect(json.status).toBe(400);
    expect(json.body.error.message).toContain('metadata has 10000 keys; at most 64 are allowed');

    const bulky = { notes: 'x'.repeat(17 * 1024) };
    const big = await api<{ error: { message: string } }>(server, 'POST', '/v1/documents', { text: 'Hello.', metadata: bulky });
    expect(big.status).toBe(400);
    expect(big.body.error.message).toMatch(/metadata is \d+ bytes as JSON; at most 16384 are allowed/);

    const batch = await api<{ accepted: unknown[]; rejected: { index: number; error: { message: string } }[] }>(server, 'POST', '/v1/documents:batch', {
      documents: [{ text: 'Fine.', metadata: { team: 'ops' } }, { text: 'Too much.', metadata: tenThousand }],
    });
    expect(batch.body.accepted).toHaveLength(1);
    expect(batch.body.rejected[0]).toMatchObject({ index: 1, error: { message: expect.stringContaining('at most 64 are allowed') } });
  });
});

describe('ingestion limits: a parse past the time limit', () => {
  let server: Server;
  beforeAll(async () => {
    // the inflated-bytes limit raised so that the 100 MB-XML DOCX reaches mammoth (minutes of work): only the time limit stops it
    server = await startServer(undefined, {
      RAG_MAX_INFLATED_BYTES: String(512 * 1024 * 1024),
      RAG_PARSE_TIMEOUT_MS: '8000',
      RAG_PARSE_MAX_MEMORY_MB: '4096',
      RAG_PARSE_WORKERS: '1',
    });
  });
  afterAll(async () => {
    await server?.stop();
    removeDir(server.dataDir);
  });

  it('/healthz answers while the parse runs; the parse is stopped and failed with the reason; the next document loads', async () => {
    expect((await upload(server, 'slow', await docxBomb(), DOCX, 'slow.docx')).status).toBe(202);
    await waitForStatus(server, 'slow', 'processing', 30_000);
    const events: string[] = [];
    const health = await api(server, 'GET', '/healthz');
    events.push(`healthz ${health.status}`);
    events.push(`document ${(await api(server, 'GET', '/v1/documents/slow')).body.status as string}`);
    // the parse was still running when /healthz answered (a parse on the server's thread would answer after it)
    expect(events).toEqual(['healthz 200', 'document processing']);

    const doc = await waitForStatus(server, 'slow', undefined, 30_000);
    expect(doc).toMatchObject({ status: 'failed', error: 'loader: timeout: parsing took longer than 8000 ms and was stopped (RAG_PARSE_TIMEOUT_MS)' });

    expect((await api(server, 'POST', '/v1/documents', { id: 'after', text: 'Parsing goes on after a stopped parse.' })).status).toBe(202);
    expect(await waitForStatus(server, 'after', undefined, 30_000)).toMatchObject({ status: 'indexed' });
  });
});

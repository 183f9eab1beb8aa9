import { useEffect, useRef, useState } from 'preact/hooks';
import { sourceOf } from '../state';
import { ErrorBanner, fmtTime, useApp, useResource } from '../ui';

export interface DocumentRow {
  document_id: string;
  title: string | null;
  status: 'queued' | 'processing' | 'indexed' | 'failed' | 'deleted';
  version: number;
  active_version: number | null;
  content_hash: string | null;
  chunks: number;
  error?: string;
  mime_type?: string | null;
  source_url?: string | null;
  metadata?: Record<string, unknown>;
  acl?: string[];
  created_at?: string;
  updated_at: string;
}

interface Upload {
  name: string;
  progress: number;
  state: 'uploading' | 'queued' | 'failed';
  id?: string;
  error?: string;
}

const PAGE = 25;
const STATUSES = ['queued', 'processing', 'indexed', 'failed', 'deleted'] as const;

/** Documents: filterable, paged table; drag-and-drop upload of several files with per-file progress; delete; re-ingest. */
export function DocumentsPage() {
  const { api, t, lang } = useApp();
  const [status, setStatus] = useState('');
  const [search, setSearch] = useState('');
  const [source, setSource] = useState('');
  // Keyset paging: the cursors of the pages before this one (page n has n − 1); "previous" pops, "next" pushes the
  // page's next_cursor. The same cost at any depth, and a refresh never brings back a row of an earlier page.
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  const pageNo = cursors.length + 1;
  const [uploads, setUploads] = useState<Upload[]>([]);
  const [actionError, setActionError] = useState<unknown>(null);
  const [dragging, setDragging] = useState(false);
  const fileInput = useRef<HTMLInputElement>(null);
  const path = `/v1/documents?limit=${PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}${status ? `&status=${status}` : ''}`;
  // `stale`: the rows shown are another page's (or filter's) until this page's request has answered.
  const { data, error, reload, stale } = useResource<{ documents: DocumentRow[]; counts: Record<string, number>; next_cursor: string | null }>(path);

  // Documents whose DELETE was accepted (202: the pipeline removes them afterwards) and whose row does not say so yet.
  // Without them the refresh right after a delete could answer before the deletion was done — on a busy machine it
  // did — and with nothing queued or processing no later refresh came: the row said `indexed` until a manual refresh.
  const [deleting, setDeleting] = useState<ReadonlySet<string>>(new Set());
  useEffect(() => {
    if (!data || deleting.size === 0) return;
    const settled = [...deleting].filter((id) => (data.documents.find((d) => d.document_id === id)?.status ?? 'deleted') === 'deleted');
    if (settled.length > 0) setDeleting((s) => new Set([...s].filter((id) => !settled.includes(id))));
  }, [data, deleting]);

  // While anything is queued, processing or being deleted, refresh every 1.5 s so the table follows it.
  const busy =
    !!data?.documents.some((d) => d.status === 'queued' || d.status === 'processing' || (deleting.has(d.document_id) && d.status !== 'deleted')) ||
    uploads.some((u) => u.state === 'uploading');
  useEffect(() => {
    if (!busy) return;
    const h = setInterval(reload, 1500);
    return () => clearInterval(h);
  }, [busy, reload]);

  const upload = (files: File[], id?: string) => {
    const start = uploads.length;
    setUploads((u) => [...u, ...files.map((f) => ({ name: f.name, progress: 0, state: 'uploading' as const }))]);
    files.forEach((file, i) => {
      const at = start + i;
      const set = (p: Partial<Upload>) => setUploads((u) => u.map((x, j) => (j === at ? { ...x, ...p } : x)));
      api
        .upload(file, (progress) => set({ progress }), ...(id ? [id] : []))
        .then((r) => {
          set({ state: 'queued', progress: 1, id: r.document_id });
          reload();
        })
        .catch((e: unknown) => set({ state: 'failed', error: e instanceof Error ? e.message : String(e) }));
    });
  };

  const remove = async (id: string) => {
    if (!window.confirm(t('confirm_delete', { id }))) return;
    setActionError(null);
    try {
      await api.request('DELETE', `/v1/documents/${encodeURIComponent(id)}`);
      setDeleting((s) => new Set([...s, id]));
      reload();
    } catch (e) {
      setActionError(e);
    }
  };

  const q = search.trim().toLowerCase();
  const rows = (data?.documents ?? []).filter(
    (d) => (!q || (d.title ?? '').toLowerCase().includes(q) || d.document_id.toLowerCase().includes(q)) && (!source || sourceOf(d.document_id) === source),
  );

  return (
    <section aria-labelledby="docs-h">
      <h1 id="docs-h">{t('documents')}</h1>
      <div
        class={`dropzone${dragging ? ' over' : ''}`}
        onDragOver={(e) => {
          e.preventDefault();
          setDragging(true);
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={(e) => {
          e.preventDefault();
          setDragging(false);
          const files = [...(e.dataTransfer?.files ?? [])];
          if (files.length) upload(files);
        }}
      >
        <p>{t('drop_here')}</p>
        <label class="button">
          {t('choose_files')}
          <input
            ref={fileInput}
            type="file"
            multiple
            class="visually-hidden"
            aria-label={t('upload')}
            onChange={(e) => {
              const files = [...(e.currentTarget.files ?? [])];
              e.currentTarget.value = '';
              if (files.length) upload(files);
            }}
          />
        </label>
        {uploads.length > 0 && (
          <ul class="uploads">
            {uploads.map((u, i) => (
              <li key={i} data-state={u.state}>
                <span class="name">{u.name}</span>
                <progress max={1} value={u.progress} aria-label={u.name} />
                <span class="state">{u.state === 'failed' ? u.error : u.state}</span>
              </li>
            ))}
          </ul>
        )}
      </div>

      <div class="filters row">
        <label>
          {t('status')}
          <select
            name="status"
            value={status}
            onChange={(e) => {
              setStatus(e.currentTarget.value);
              setCursors([]);
            }}
          >
            <option value="">{t('any')}</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label class="grow">
          {t('search_title')}
          <input name="search" type="search" value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
        </label>
        <label>
          {t('source')}
          <select name="source" value={source} onChange={(e) => setSource(e.currentTarget.value)}>
            <option value="">{t('any')}</option>
            {['upload', 'confluence', 'notion', 'api'].map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <button type="button" onClick={reload}>
          {t('refresh')}
        </button>
      </div>
      {data && (
        <p class="counts muted">
          {Object.entries(data.counts)
            .map(([k, v]) => `${k}: ${v}`)
            .join(' · ')}
        </p>
      )}
      <ErrorBanner error={error ?? actionError} />
      <div class="table-wrap">
        <table class="documents" aria-busy={stale} data-page={stale ? undefined : pageNo}>
          <thead>
            <tr>
              <th scope="col">{t('title')}</th>
              <th scope="col">{t('status')}</th>
              <th scope="col">{t('source')}</th>
              <th scope="col">{t('chunks')}</th>
              <th scope="col">{t('version')}</th>
              <th scope="col">{t('updated')}</th>
              <th scope="col">{t('actions')}</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((d) => (
              <tr key={d.document_id} data-document={d.document_id} data-status={d.status}>
                <td>
                  <a href={`#/documents/${encodeURIComponent(d.document_id)}`}>{d.title || d.document_id}</a>
                  {d.status === 'failed' && d.error && (
                    <div class="error-reason">
                      {t('failure_reason')}: {d.error}
                    </div>
                  )}
                </td>
                <td>
                  <span class={`badge ${d.status}`}>{d.status}</span>
                </td>
                <td>{sourceOf(d.document_id)}</td>
                <td>{d.chunks}</td>
                <td>{d.version}</td>
                <td>{fmtTime(d.updated_at, lang)}</td>
                <td class="actions">
                  {d.document_id.startsWith('upload:') && d.status !== 'deleted' && (
                    <label class="button small" title={t('reingest_hint')}>
                      {t('reingest')}
                      <input
                        type="file"
                        class="visually-hidden"
                        aria-label={`${t('reingest')} ${d.document_id}`}
                        onChange={(e) => {
                          const f = e.currentTarget.files?.[0];
                          e.currentTarget.value = '';
                          if (f) upload([f], d.document_id);
                        }}
                      />
                    </label>
                  )}
                  {d.status !== 'deleted' && (
                    <button type="button" class="small danger" onClick={() => void remove(d.document_id)} aria-label={`${t('delete')} ${d.document_id}`}>
                      {t('delete')}
                    </button>
                  )}
                </td>
              </tr>
            ))}
            {data && rows.length === 0 && (
              <tr>
                <td colSpan={7}>{t('no_documents')}</td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
      <nav class="pager row" aria-label={t('page', { n: pageNo })}>
        <button type="button" disabled={cursors.length === 0} onClick={() => setCursors((c) => c.slice(0, -1))}>
          {t('previous')}
        </button>
        <span>{t('page', { n: pageNo })}</span>
        <button type="button" disabled={!data?.next_cursor} onClick={() => data?.next_cursor && setCursors((c) => [...c, data.next_cursor!])}>
          {t('next')}
        </button>
      </nav>
    </section>
  );
}

interface ChunkRow {
  chunk_id: string;
  ordinal: number;
  kind: 'parent' | 'child';
  parent_id: string | null;
  heading_path: string[];
  text: string;
  token_count: number;
}

const CHUNK_PAGE = 50;

/** One document: status, versions, failure reason, metadata, ACL, and the chunks of its active version (paged). */
export function DocumentPage({ id }: { id: string }) {
  const { t, lang } = useApp();
  const { data, error } = useResource<DocumentRow>(`/v1/documents/${encodeURIComponent(id)}`);
  const [chunkOffset, setChunkOffset] = useState(0);
  const chunks = useResource<{ active_version: number | null; total: number; chunks: ChunkRow[] }>(
    `/v1/documents/${encodeURIComponent(id)}/chunks?limit=${CHUNK_PAGE}&offset=${chunkOffset}`,
  );
  return (
    <section aria-labelledby="doc-h">
      <p>
        <a href="#/documents">← {t('back')}</a>
      </p>
      <h1 id="doc-h">{data?.title || id}</h1>
      <ErrorBanner error={error} />
      {data && (
        <dl class="facts">
          <dt>{t('document')}</dt>
          <dd>{data.document_id}</dd>
          <dt>{t('status')}</dt>
          <dd>
            <span class={`badge ${data.status}`}>{data.status}</span>
          </dd>
          {data.error && (
            <>
              <dt>{t('failure_reason')}</dt>
              <dd class="error-reason">{data.error}</dd>
            </>
          )}
          <dt>{t('version')}</dt>
          <dd>{data.version}</dd>
          <dt>{t('active_version')}</dt>
          <dd>{data.active_version ?? '—'}</dd>
          <dt>{t('chunks')}</dt>
          <dd>{data.chunks}</dd>
          <dt>{t('content_hash')}</dt>
          <dd>
            <code>{data.content_hash ?? '—'}</code>
          </dd>
          <dt>{t('source')}</dt>
          <dd>{data.source_url ? <a href={data.source_url}>{data.source_url}</a> : sourceOf(data.document_id)}</dd>
          <dt>{t('updated')}</dt>
          <dd>{fmtTime(data.updated_at, lang)}</dd>
          <dt>{t('metadata')}</dt>
          <dd>
            <code>{JSON.stringify(data.metadata ?? {})}</code>
          </dd>
          <dt>{t('acl')}</dt>
          <dd>{(data.acl ?? []).join(', ') || '—'}</dd>
        </dl>
      )}
      <h2>{t('chunk_list', { version: chunks.data?.active_version ?? '—', total: chunks.data?.total ?? 0 })}</h2>
      <ErrorBanner error={chunks.error} />
      <div class="table-wrap">
        <table class="chunks" aria-busy={chunks.stale} data-page={chunks.stale ? undefined : chunkOffset / CHUNK_PAGE + 1}>
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col">{t('kind')}</th>
              <th scope="col">{t('heading_path')}</th>
              <th scope="col">{t('parent')}</th>
              <th scope="col">{t('text')}</th>
            </tr>
          </thead>
          <tbody>
            {chunks.data?.chunks.map((c) => (
              <tr key={c.chunk_id} data-chunk={c.chunk_id} data-kind={c.kind}>
                <td>{c.ordinal}</td>
                <td>
                  <span class={`badge ${c.kind === 'parent' ? 'deleted' : 'indexed'}`}>{c.kind}</span>
                </td>
                <td>{c.heading_path.join(' › ') || '—'}</td>
                <td>{c.parent_id ? `#${c.parent_id.split('#').pop()}` : '—'}</td>
                <td class="chunk-cell">
                  <details>
                    <summary>{c.text.length > 140 ? `${c.text.slice(0, 140)}…` : c.text}</summary>
                    <p class="chunk-text">{c.text}</p>
                  </details>
                  <small class="muted">{t('tokens', { n: c.token_count })}</small>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {(chunks.data?.total ?? 0) > CHUNK_PAGE && (
        <nav class="pager row" aria-label={t('chunk_pages')}>
          <button type="button" disabled={chunkOffset === 0} onClick={() => setChunkOffset(Math.max(0, chunkOffset - CHUNK_PAGE))}>
            {t('previous')}
          </button>
          <span>{t('page', { n: chunkOffset / CHUNK_PAGE + 1 })}</span>
          <button type="button" disabled={chunkOffset + CHUNK_PAGE >= (chunks.data?.total ?? 0)} onClick={() => setChunkOffset(chunkOffset + CHUNK_PAGE)}>
            {t('next')}
          </button>
        </nav>
      )}
      <p class="muted">{t('versions_note')}</p>
    </section>
  );
}

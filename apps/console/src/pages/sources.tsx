import { useState } from 'preact/hooks';
import { ErrorBanner, fmtTime, useApp, useResource } from '../ui';

interface ReconcileSeen {
  at: string;
  trigger: string;
  scopes: { scope: string; listed: number; upserts: number; deletes: number; error?: string }[];
}
interface SourceView {
  kind: string;
  connected: boolean;
  webhook_configured: boolean;
  scopes: string[];
  error?: string;
  last_webhook: { at: string; outcome: string; ok: boolean; detail?: string; document_id?: string } | null;
  last_reconcile: ReconcileSeen | null;
}

/** Sources: Confluence and Notion — connection, webhooks and their last delivery, last reconciliation, reconcile now. */
export function SourcesPage() {
  const { api, t, lang, session } = useApp();
  const { data, error, reload } = useResource<{ sources: SourceView[]; reconcile_interval_s: number }>('/v1/sources');
  const [running, setRunning] = useState(false);
  const [runError, setRunError] = useState<unknown>(null);
  const reconcile = async () => {
    setRunning(true);
    setRunError(null);
    try {
      await api.request('POST', '/v1/sources/reconcile');
      reload();
    } catch (e) {
      setRunError(e);
    } finally {
      setRunning(false);
    }
  };
  return (
    <section aria-labelledby="src-h">
      <h1 id="src-h">{t('sources')}</h1>
      <ErrorBanner error={error ?? runError} />
      {session.scopes.includes('admin') && (
        <button type="button" onClick={() => void reconcile()} disabled={running}>
          {t('reconcile_now')}
        </button>
      )}
      <div class="cards">
        {data?.sources.map((s) => (
          <article key={s.kind} class="card" data-source={s.kind} aria-labelledby={`src-${s.kind}`}>
            <h2 id={`src-${s.kind}`}>{s.kind === 'confluence' ? 'Confluence' : 'Notion'}</h2>
            <p>
              <span class={`badge ${s.connected ? 'indexed' : 'deleted'}`}>{s.connected ? t('connected') : t('not_connected')}</span>{' '}
              <span class={`badge ${s.webhook_configured ? 'indexed' : 'deleted'}`}>
                {t('webhooks')}: {s.webhook_configured ? t('webhook_on') : t('webhook_off')}
              </span>
            </p>
            {s.error && <p class="error">{s.error}</p>}
            {s.scopes.length > 0 && (
              <p>
                {t('scopes')}: {s.scopes.join(', ')}
              </p>
            )}
            <h3>{t('last_webhook')}</h3>
            {s.last_webhook ? (
              <p class="webhook" data-ok={String(s.last_webhook.ok)}>
                {fmtTime(s.last_webhook.at, lang)} · <span class={`badge ${s.last_webhook.ok ? 'indexed' : 'failed'}`}>{s.last_webhook.outcome}</span>
                {s.last_webhook.document_id && <> · {s.last_webhook.document_id}</>}
                {s.last_webhook.detail && <div class="muted">{s.last_webhook.detail}</div>}
              </p>
            ) : (
              <p class="muted">{t('never')}</p>
            )}
            <h3>{t('last_reconcile')}</h3>
            {s.last_reconcile ? (
              <div class="reconcile">
                <p>
                  {fmtTime(s.last_reconcile.at, lang)} ({s.last_reconcile.trigger})
                </p>
                <ul>
                  {s.last_reconcile.scopes.map((r) => (
                    <li key={r.scope}>
                      {t('reconcile_counts', { scope: r.scope, listed: r.listed, upserts: r.upserts, deletes: r.deletes })}
                      {r.error && <span class="error"> {r.error}</span>}
                    </li>
                  ))}
                </ul>
              </div>
            ) : (
              <p class="muted">{t('never')}</p>
            )}
          </article>
        ))}
      </div>
    </section>
  );
}

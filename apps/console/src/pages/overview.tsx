import { ErrorBanner, fmtTime, useApp, useResource } from '../ui';

interface Overview {
  documents: Record<string, number>;
  window_s: number;
  ingested: number;
  ingestion_per_min: number;
  dead_letters: number;
  answers: { answered: number; refused: number; refusal_rate: number | null };
  feedback: { up: number; down: number };
  eval: { finished_at: string; dataset: string; results: Record<string, number | string>[] } | { error: string } | null;
}

/** Overview: documents by status and the last hour's ingestion, dead letters, answers, refusals and feedback. */
export function OverviewPage() {
  const { t, lang } = useApp();
  const { data, error } = useResource<Overview>('/v1/overview');
  const stat = (label: string, value: string | number, id: string) => (
    <div class="stat" data-stat={id}>
      <div class="value">{value}</div>
      <div class="label">{label}</div>
    </div>
  );
  return (
    <section aria-labelledby="ov-h">
      <h1 id="ov-h">{t('overview')}</h1>
      <ErrorBanner error={error} />
      {data && (
        <>
          <h2>{t('by_status')}</h2>
          <div class="stats">{Object.entries(data.documents).map(([k, v]) => stat(k, v, `status-${k}`))}</div>
          <h2>{t('last_hour', { minutes: Math.max(1, Math.round(data.window_s / 60)) })}</h2>
          <div class="stats">
            {stat(t('ingested'), data.ingested, 'ingested')}
            {stat(t('ingestion_rate'), t('per_min', { n: data.ingestion_per_min }), 'ingestion-rate')}
            {stat(t('dead_letters'), data.dead_letters, 'dead-letters')}
            {stat(t('answers'), data.answers.answered, 'answered')}
            {stat(t('refusals'), data.answers.refused, 'refused')}
            {stat(t('refusal_rate'), data.answers.refusal_rate === null ? '—' : `${Math.round(data.answers.refusal_rate * 100)} %`, 'refusal-rate')}
            {stat(t('feedback_up'), data.feedback.up, 'feedback-up')}
            {stat(t('feedback_down'), data.feedback.down, 'feedback-down')}
          </div>
          <h2>{t('eval_latest')}</h2>
          {data.eval === null ? (
            <p class="muted">{t('eval_none')}</p>
          ) : 'error' in data.eval ? (
            <p class="error">{data.eval.error}</p>
          ) : (
            <EvalTable report={data.eval} when={fmtTime(data.eval.finished_at, lang)} />
          )}
        </>
      )}
    </section>
  );
}

/** One row per evaluated mode; the numeric columns are whatever metrics the report has (ndcg@10, recall@k, …). */
function EvalTable({ report, when }: { report: { dataset: string; results: Record<string, number | string>[] }; when: string }) {
  const { t } = useApp();
  const metrics = [...new Set(report.results.flatMap((r) => Object.keys(r).filter((k) => typeof r[k] === 'number')))];
  return (
    <div class="table-wrap" data-eval={report.dataset}>
      <p class="muted">{t('eval_of', { dataset: report.dataset, when })}</p>
      <table>
        <thead>
          <tr>
            <th scope="col">{t('mode')}</th>
            {metrics.map((m) => (
              <th key={m} scope="col">
                {m}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {report.results.map((r, i) => (
            <tr key={i}>
              <th scope="row">{String(r.mode ?? '—')}</th>
              {metrics.map((m) => (
                <td key={m}>{typeof r[m] === 'number' ? r[m] : '—'}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

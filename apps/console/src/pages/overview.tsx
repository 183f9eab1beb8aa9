import { ErrorBanner, useApp, useResource } from '../ui';

interface Overview {
  documents: Record<string, number>;
  window_s: number;
  ingested: number;
  ingestion_per_min: number;
  dead_letters: number;
  answers: { answered: number; refused: number; refusal_rate: number | null };
  feedback: { up: number; down: number };
}

/** Overview: documents by status and the last hour's ingestion, dead letters, answers, refusals and feedback. */
export function OverviewPage() {
  const { t } = useApp();
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
        </>
      )}
    </section>
  );
}

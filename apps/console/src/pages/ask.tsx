import { useReducer, useRef, useState } from 'preact/hooks';
import { ApiError } from '../api';
import { askReducer, highlightSupport, initialAsk, segmentAnswer, timingBars, traceUrl, type Citation } from '../state';
import { describeError, useApp } from '../ui';

/** Ask: a question, the streamed answer with clickable [n] citations, feedback, the per-stage timing bar and the trace. */
export function AskPage() {
  const { api, t, session } = useApp();
  const [s, dispatch] = useReducer(askReducer, initialAsk);
  const [question, setQuestion] = useState('');
  const [mode, setMode] = useState('hybrid');
  const [topK, setTopK] = useState('');
  const [filters, setFilters] = useState('');
  const [formError, setFormError] = useState<string | null>(null);
  const [open, setOpen] = useState<Citation | null>(null);
  const [comment, setComment] = useState('');
  const [rating, setRating] = useState<'up' | 'down' | null>(null);
  const [feedbackError, setFeedbackError] = useState<unknown>(null);
  const dialogClose = useRef<HTMLButtonElement>(null);

  const submit = async (ev: Event) => {
    ev.preventDefault();
    const q = question.trim();
    if (!q) return;
    setFormError(null);
    let f: unknown;
    if (filters.trim()) {
      try {
        f = JSON.parse(filters);
      } catch {
        f = null;
      }
      if (typeof f !== 'object' || f === null || Array.isArray(f)) return setFormError(t('filters_invalid'));
    }
    setOpen(null);
    setRating(null);
    setComment('');
    setFeedbackError(null);
    dispatch({ type: 'start', question: q });
    try {
      await api.streamQuery({ question: q, mode, ...(topK ? { top_k: Number(topK) } : {}), ...(f ? { filters: f } : {}) }, (event) => dispatch({ type: 'event', event }));
      dispatch({ type: 'ended' });
    } catch (e) {
      dispatch({ type: 'failed', code: e instanceof ApiError ? e.code : 'error', message: describeError(e, t) });
    }
  };

  const sendFeedback = async (r: 'up' | 'down') => {
    if (!s.traceId) return;
    dispatch({ type: 'feedback', state: 'sending' });
    setFeedbackError(null);
    try {
      await api.request('POST', '/v1/feedback', { trace_id: s.traceId, rating: r, ...(comment.trim() ? { comment: comment.trim() } : {}) });
      dispatch({ type: 'feedback', state: r });
    } catch (e) {
      setFeedbackError(e);
      dispatch({ type: 'feedback', state: 'failed' });
    }
  };

  const showCitation = (ref: number) => {
    const c = s.answer?.citations.find((x) => x.ref === ref);
    if (c) {
      setOpen(c);
      queueMicrotask(() => dialogClose.current?.focus());
    }
  };
  const a = s.answer;
  const link = s.traceId ? traceUrl(session.trace_url_template, s.traceId) : null;

  return (
    <section aria-labelledby="ask-h">
      <h1 id="ask-h">{t('nav_ask')}</h1>
      <form class="ask" onSubmit={submit}>
        <label class="grow">
          {t('question')}
          <input name="question" type="text" value={question} onInput={(e) => setQuestion(e.currentTarget.value)} maxLength={4000} required autoFocus />
        </label>
        <label>
          {t('mode')}
          <select name="mode" value={mode} onChange={(e) => setMode(e.currentTarget.value)}>
            <option value="hybrid">hybrid</option>
            <option value="dense">dense</option>
            <option value="keyword">keyword</option>
          </select>
        </label>
        <label>
          {t('top_k')}
          <input name="top_k" type="number" min={1} max={100} value={topK} onInput={(e) => setTopK(e.currentTarget.value)} class="narrow" />
        </label>
        <label class="grow">
          {t('filters')}
          <input name="filters" type="text" value={filters} placeholder='{"topic": "wings"}' onInput={(e) => setFilters(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={s.phase === 'streaming'}>
          {s.phase === 'streaming' ? t('asking') : t('ask')}
        </button>
      </form>
      {formError && <p class="error" role="alert">{formError}</p>}

      {s.phase !== 'idle' && (
        <div class={`answer${a?.refused ? ' refused' : ''}`} aria-live="polite" aria-busy={s.phase === 'streaming'} data-phase={s.phase}>
          <h2>{t('answer')}</h2>
          {a?.refused && <p class="refusal" role="status">{t('refused')}</p>}
          <p class="answer-text">
            {segmentAnswer(s.text).map((g, i) =>
              g.kind === 'text' ? (
                <span key={i}>{g.text}</span>
              ) : (
                <button key={i} type="button" class="ref" disabled={!a?.citations.some((c) => c.ref === g.ref)} onClick={() => showCitation(g.ref)} aria-label={t('cited_chunk', { ref: g.ref })}>
                  {g.text}
                </button>
              ),
            )}
          </p>
          {s.phase === 'error' && s.error && <p class="error" role="alert">{s.error.message}</p>}
          {a && a.degraded.length > 0 && <p class="muted">{t('degraded', { parts: a.degraded.join(', ') })}</p>}
        </div>
      )}

      {open && a && (
        <div class="citation-panel" role="dialog" aria-modal="false" aria-labelledby="cite-h" onKeyDown={(e) => e.key === 'Escape' && setOpen(null)}>
          <h2 id="cite-h">
            {t('cited_chunk', { ref: open.ref })}: {open.title || open.document_id}
          </h2>
          <p class="muted">
            {open.document_id}
            {open.heading_path && open.heading_path.length > 0 && (
              <>
                {' · '}
                {t('heading_path')}: {open.heading_path.join(' › ')}
              </>
            )}
            {open.source_url && (
              <>
                {' · '}
                <a href={open.source_url} target="_blank" rel="noreferrer noopener">
                  {t('source_link')}
                </a>
              </>
            )}
          </p>
          <blockquote class="chunk-text">
            {highlightSupport(open.text, a.answer, open.ref).map((p, i) => (p.mark ? <mark key={i}>{p.text}</mark> : <span key={i}>{p.text}</span>))}
          </blockquote>
          <button type="button" ref={dialogClose} onClick={() => setOpen(null)}>
            {t('close')}
          </button>
        </div>
      )}

      {a && a.statements && a.statements.length > 0 && (
        <div>
          <h2>{t('statements')}</h2>
          <ul class="statements">
            {a.statements.map((st, i) => (
              <li key={i} data-supported={st.supported ? 'true' : 'false'}>
                <span class={`badge ${st.supported ? 'supported' : 'unsupported'}`} title={`support ${Number(st.support).toFixed(2)}`}>
                  {st.supported ? '✓' : '✗'} {Math.round(Number(st.support) * 100)}%
                </span>{' '}
                {st.text}{' '}
                {(Array.isArray(st.source_ids) ? st.source_ids : []).map((ref) => (
                  <button key={ref} type="button" class="ref" disabled={!a.citations.some((c) => c.ref === ref)} onClick={() => showCitation(ref)} aria-label={t('cited_chunk', { ref })}>
                    [{ref}]
                  </button>
                ))}
              </li>
            ))}
          </ul>
        </div>
      )}

      {a && a.citations.length > 0 && (
        <div>
          <h2>{t('citations')}</h2>
          <ol class="citations">
            {a.citations.map((c) => (
              <li key={c.ref}>
                <button type="button" class="link" onClick={() => showCitation(c.ref)}>
                  [{c.ref}] {c.title || c.document_id}
                </button>{' '}
                <small class="muted">
                  {c.document_id} · {c.score.toFixed(3)}
                </small>
              </li>
            ))}
          </ol>
        </div>
      )}

      {s.phase === 'done' && (
        <div class="feedback">
          <h2>{t('feedback_prompt')}</h2>
          <div class="row">
            <button type="button" aria-pressed={rating === 'up'} onClick={() => setRating('up')} aria-label={t('thumbs_up')}>
              <span aria-hidden="true" class="thumb up" /> {t('thumbs_up')}
            </button>
            <button type="button" aria-pressed={rating === 'down'} onClick={() => setRating('down')} aria-label={t('thumbs_down')}>
              <span aria-hidden="true" class="thumb down" /> {t('thumbs_down')}
            </button>
            <label class="grow">
              {t('comment')}
              <input name="comment" type="text" maxLength={2000} value={comment} onInput={(e) => setComment(e.currentTarget.value)} />
            </label>
            <button type="button" disabled={!rating || s.feedback === 'sending' || s.feedback === 'up' || s.feedback === 'down'} onClick={() => rating && void sendFeedback(rating)}>
              {t('send_feedback')}
            </button>
          </div>
          {(s.feedback === 'up' || s.feedback === 'down') && <p role="status" class="ok">{t('feedback_thanks')}</p>}
          {s.feedback === 'failed' && (
            <p role="alert" class="error">
              {t('feedback_failed')} {describeError(feedbackError, t)}
            </p>
          )}
        </div>
      )}

      {a && (
        <div class="timings">
          <h2>{t('timings')}</h2>
          <div class="bar" role="img" aria-label={timingBars(a.timings_ms).map((b) => `${b.stage} ${b.ms} ms`).join(', ')}>
            {timingBars(a.timings_ms).map((b) => (
              <span key={b.stage} class={`seg s-${b.stage}`} style={{ width: `${Math.max(b.pct, 0.5)}%` }} title={`${b.stage}: ${b.ms} ms`} />
            ))}
          </div>
          <table>
            <tbody>
              {timingBars(a.timings_ms).map((b) => (
                <tr key={b.stage}>
                  <th scope="row">
                    <span class={`dot s-${b.stage}`} /> {b.stage}
                  </th>
                  <td>{b.ms} ms</td>
                </tr>
              ))}
              <tr>
                <th scope="row">{t('total')}</th>
                <td>{a.timings_ms.total ?? '—'} ms</td>
              </tr>
            </tbody>
          </table>
          <p class="muted">
            {t('trace')}:{' '}
            {link ? (
              <a href={link} target="_blank" rel="noreferrer noopener" class="trace">
                {s.traceId}
              </a>
            ) : (
              <code class="trace">{s.traceId}</code>
            )}
          </p>
        </div>
      )}
    </section>
  );
}

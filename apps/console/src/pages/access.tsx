import { useState } from 'preact/hooks';
import { ErrorBanner, fmtTime, useApp, useResource } from '../ui';

interface KeyView {
  id: string;
  name: string | null;
  tenant: string;
  scopes: string[];
  groups: string[];
  unrestricted: boolean;
  rate_limit: { rps: number; burst: number } | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

const SCOPES = ['query', 'ingest', 'admin'] as const;

/** Access (admin): API keys of the tenant — create (the secret shown once, with a copy button), list, revoke. */
export function AccessPage() {
  const { api, t, lang } = useApp();
  const [showRevoked, setShowRevoked] = useState(false);
  const { data, error, reload } = useResource<{ api_keys: KeyView[] }>(`/v1/admin/api-keys${showRevoked ? '?include_revoked=true' : ''}`);
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<string[]>(['query']);
  const [groups, setGroups] = useState('');
  const [unrestricted, setUnrestricted] = useState(false);
  const [rps, setRps] = useState('');
  const [burst, setBurst] = useState('');
  const [created, setCreated] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);
  const [formError, setFormError] = useState<unknown>(null);

  const create = async (ev: Event) => {
    ev.preventDefault();
    setFormError(null);
    setCreated(null);
    setCopied(false);
    if (scopes.length === 0) return setFormError(new Error(t('scope_needed')));
    const g = groups
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    try {
      const r = await api.request<KeyView & { key: string }>('POST', '/v1/admin/api-keys', {
        scopes,
        ...(name.trim() ? { name: name.trim() } : {}),
        ...(g.length ? { groups: g } : {}),
        ...(unrestricted ? { unrestricted: true } : {}),
        ...(rps ? { rate_limit: { rps: Number(rps), burst: Number(burst || rps) } } : {}),
      });
      setCreated(r.key);
      setName('');
      reload();
    } catch (e) {
      setFormError(e);
    }
  };
  const revoke = async (id: string) => {
    setFormError(null);
    try {
      await api.request('DELETE', `/v1/admin/api-keys/${encodeURIComponent(id)}`);
      reload();
    } catch (e) {
      setFormError(e);
    }
  };
  const copy = async () => {
    if (!created) return;
    try {
      await navigator.clipboard.writeText(created);
      setCopied(true);
    } catch {
      // No clipboard permission (e.g. plain http on another host): select the text so Ctrl+C copies it.
      const el = document.getElementById('new-key');
      if (el) window.getSelection()?.selectAllChildren(el);
    }
  };

  return (
    <section aria-labelledby="acc-h">
      <h1 id="acc-h">{t('access')}</h1>
      <form class="card" onSubmit={create} aria-label={t('create_key')}>
        <div class="row">
          <label class="grow">
            {t('name')}
            <input name="name" type="text" maxLength={128} value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </label>
          <fieldset>
            <legend>{t('scopes')}</legend>
            {SCOPES.map((s) => (
              <label key={s} class="inline">
                <input
                  type="checkbox"
                  name={`scope-${s}`}
                  checked={scopes.includes(s)}
                  onChange={(e) => setScopes((cur) => (e.currentTarget.checked ? [...cur, s] : cur.filter((x) => x !== s)))}
                />{' '}
                {s}
              </label>
            ))}
          </fieldset>
        </div>
        <div class="row">
          <label class="grow">
            {t('groups')}
            <input name="groups" type="text" value={groups} disabled={unrestricted} onInput={(e) => setGroups(e.currentTarget.value)} />
          </label>
          <label class="inline">
            <input type="checkbox" name="unrestricted" checked={unrestricted} onChange={(e) => setUnrestricted(e.currentTarget.checked)} /> {t('unrestricted')}
          </label>
        </div>
        <div class="row">
          <label>
            {t('rate_rps')}
            <input name="rps" type="number" min={0.1} step="any" class="narrow" value={rps} onInput={(e) => setRps(e.currentTarget.value)} />
          </label>
          <label>
            {t('rate_burst')}
            <input name="burst" type="number" min={1} class="narrow" value={burst} onInput={(e) => setBurst(e.currentTarget.value)} />
          </label>
          <button type="submit">{t('create_key')}</button>
        </div>
      </form>
      {created && (
        <div class="created" role="status">
          <p>{t('key_created')}</p>
          <code id="new-key" class="secret">
            {created}
          </code>{' '}
          <button type="button" onClick={() => void copy()}>
            {copied ? t('copied') : t('copy')}
          </button>
        </div>
      )}
      <ErrorBanner error={error ?? formError} />
      <label class="inline">
        <input type="checkbox" checked={showRevoked} onChange={(e) => setShowRevoked(e.currentTarget.checked)} /> {t('show_revoked')}
      </label>
      <div class="table-wrap">
        <table class="keys">
          <thead>
            <tr>
              <th scope="col">{t('name')}</th>
              <th scope="col">{t('scopes')}</th>
              <th scope="col">{t('groups')}</th>
              <th scope="col">{t('rate_rps')}</th>
              <th scope="col">{t('created')}</th>
              <th scope="col">{t('last_used')}</th>
              <th scope="col">{t('actions')}</th>
            </tr>
          </thead>
          <tbody>
            {data?.api_keys.map((k) => (
              <tr key={k.id} data-key={k.id} data-revoked={String(!!k.revoked_at)}>
                <td>
                  {k.name ?? '—'} <small class="muted">{k.id}</small>
                </td>
                <td>{k.scopes.join(', ')}</td>
                <td>{k.unrestricted ? '*' : k.groups.join(', ') || '—'}</td>
                <td>{k.rate_limit ? `${k.rate_limit.rps}/s (${k.rate_limit.burst})` : '—'}</td>
                <td>{fmtTime(k.created_at, lang)}</td>
                <td>{fmtTime(k.last_used_at, lang)}</td>
                <td>
                  {k.revoked_at ? (
                    <span class="badge deleted">{t('revoked')}</span>
                  ) : (
                    <button type="button" class="small danger" onClick={() => void revoke(k.id)} aria-label={`${t('revoke')} ${k.name ?? k.id}`}>
                      {t('revoke')}
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

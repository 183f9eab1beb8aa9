import { render } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { Api, keyStore } from './api';
import { initialLang, translate, type Lang, type MessageKey } from './i18n';
import { AccessPage } from './pages/access';
import { AskPage } from './pages/ask';
import { DocumentPage, DocumentsPage } from './pages/documents';
import { OverviewPage } from './pages/overview';
import { SourcesPage } from './pages/sources';
import { routeOf, visibleRoutes, type Route } from './state';
import { AppContext, ErrorBanner, type Session } from './ui';
import './styles.css';

const LANG_KEY = 'rag-console-lang';

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

function App() {
  const [lang, setLang] = useState<Lang>(() => initialLang(localStorage.getItem(LANG_KEY), navigator.language));
  const [key, setKey] = useState(keyStore.get());
  const [draft, setDraft] = useState(key);
  const [session, setSession] = useState<Session | null>(null);
  const [sessionError, setSessionError] = useState<unknown>(null);
  const hash = useHash();
  const api = useMemo(() => new Api(key), [key]);
  const t = useMemo(() => (k: MessageKey, v?: Record<string, string | number>) => translate(lang, k, v), [lang]);

  useEffect(() => {
    document.documentElement.lang = lang === 'zh' ? 'zh-CN' : 'en';
    document.title = t('app_title');
  }, [lang, t]);

  useEffect(() => {
    let live = true;
    setSession(null);
    setSessionError(null);
    api
      .request<Session>('GET', '/v1/session')
      .then((s) => live && setSession(s))
      .catch((e: unknown) => live && setSessionError(e));
    return () => {
      live = false;
    };
  }, [api]);

  const visible = session ? visibleRoutes(session.scopes) : [];
  const { route, param } = routeOf(hash, visible);
  const useKey = (ev: Event) => {
    ev.preventDefault();
    keyStore.set(draft.trim());
    setKey(draft.trim());
  };
  const switchLang = (l: Lang) => {
    localStorage.setItem(LANG_KEY, l);
    setLang(l);
  };
  const pages: Record<Route, () => preact.JSX.Element> = {
    overview: () => <OverviewPage />,
    ask: () => <AskPage />,
    documents: () => (param ? <DocumentPage id={param} /> : <DocumentsPage />),
    sources: () => <SourcesPage />,
    access: () => <AccessPage />,
  };

  return (
    <>
      <a class="skip" href="#main">
        {t('skip')}
      </a>
      <header class="top">
        <strong class="brand">{t('app_title')}</strong>
        {session && (
          <nav aria-label={t('nav_label')}>
            <ul>
              {visible.map((r) => (
                <li key={r}>
                  <a href={`#/${r}`} aria-current={r === route ? 'page' : undefined}>
                    {t(`nav_${r}` as MessageKey)}
                  </a>
                </li>
              ))}
            </ul>
          </nav>
        )}
        <form class="key" onSubmit={useKey}>
          <label>
            {t('api_key')}
            <input name="api-key" type="password" autoComplete="off" value={draft} onInput={(e) => setDraft(e.currentTarget.value)} title={t('api_key_hint')} />
          </label>
          <button type="submit">{t('use_key')}</button>
          {key && (
            <button
              type="button"
              onClick={() => {
                keyStore.set('');
                setDraft('');
                setKey('');
              }}
            >
              {t('forget_key')}
            </button>
          )}
        </form>
        <label class="lang">
          {t('language')}
          <select name="language" value={lang} onChange={(e) => switchLang(e.currentTarget.value as Lang)}>
            <option value="en">English</option>
            <option value="zh">中文</option>
          </select>
        </label>
      </header>
      <main id="main" tabIndex={-1}>
        {session && (
          <p class="muted whoami">
            {session.kind === 'anonymous' ? t('anonymous') : t('signed_in_as', { tenant: session.tenant, scopes: session.scopes.join(', ') })}
          </p>
        )}
        <ErrorBanner error={sessionError} />
        {!session && !sessionError && <p>{t('loading')}</p>}
        {session && !route && <p>{t('no_pages')}</p>}
        <AppContext.Provider value={{ api, lang, t, session: session ?? { tenant: '', scopes: [], kind: 'anonymous', key_id: null, restricted: false, trace_url_template: null } }}>
          {session && route && pages[route]()}
        </AppContext.Provider>
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);

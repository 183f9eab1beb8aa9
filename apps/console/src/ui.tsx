import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useState } from 'preact/hooks';
import { Api, describeError } from './api';
import { translate, type Lang, type MessageKey } from './i18n';

export interface Session {
  tenant: string;
  scopes: string[];
  kind: 'anonymous' | 'env' | 'stored';
  key_id: string | null;
  restricted: boolean;
  trace_url_template: string | null;
}

export interface Ctx {
  api: Api;
  lang: Lang;
  t: (key: MessageKey, vars?: Record<string, string | number>) => string;
  session: Session;
}

export const AppContext = createContext<Ctx>({
  api: new Api(''),
  lang: 'en',
  t: (k, v) => translate('en', k, v),
  session: { tenant: '', scopes: [], kind: 'anonymous', key_id: null, restricted: false, trace_url_template: null },
});
export const useApp = () => useContext(AppContext);
export { describeError };

export function ErrorBanner({ error }: { error: unknown }) {
  const { t } = useApp();
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {describeError(error, t)}
    </p>
  );
}

/**
 * Loads `path` (and again on `reload()` or when `path` changes). `stale`: the `data` shown came from another path (the
 * previous page or filter) and this one has not answered yet, so a page can say so (`aria-busy`) instead of presenting
 * the old rows under the new page's label.
 */
export function useResource<T>(path: string | null): { data: T | null; error: unknown; loading: boolean; stale: boolean; reload: () => void } {
  const { api } = useApp();
  const [state, setState] = useState<{ data: T | null; error: unknown; loading: boolean; loaded: string | null }>({ data: null, error: null, loading: !!path, loaded: null });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (!path) return;
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    api
      .request<T>('GET', path)
      .then((data) => live && setState({ data, error: null, loading: false, loaded: path }))
      .catch((error: unknown) => live && setState((s) => ({ ...s, error, loading: false })));
    return () => {
      live = false;
    };
  }, [api, path, tick]);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  const { loaded, ...shown } = state;
  return { ...shown, stale: loaded !== path, reload };
}

export const fmtTime = (iso: string | null | undefined, lang: Lang) => (iso ? new Date(iso).toLocaleString(lang === 'zh' ? 'zh-CN' : 'en-GB') : '—');

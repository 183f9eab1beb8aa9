import { MESSAGES, initialLang, translate } from './i18n';

describe('i18n', () => {
  it('English and Chinese have the same keys and the same placeholders', () => {
    expect(Object.keys(MESSAGES.zh).sort()).toEqual(Object.keys(MESSAGES.en).sort());
    const holes = (s: string) => (s.match(/\{\w+\}/g) ?? []).sort();
    for (const k of Object.keys(MESSAGES.en) as (keyof typeof MESSAGES.en)[]) expect(holes(MESSAGES.zh[k]), k).toEqual(holes(MESSAGES.en[k]));
  });
  it('fills placeholders and picks the language', () => {
    expect(translate('zh', 'err_429', { retry: 3 })).toBe('请求过多：请 3 秒后重试。');
    expect(translate('en', 'page', {})).toBe('Page {n}');
    expect(initialLang(null, 'zh-TW')).toBe('zh');
    expect(initialLang('en', 'zh-CN')).toBe('en');
    expect(initialLang(null, undefined)).toBe('en');
  });
});

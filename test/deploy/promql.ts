/**
 * The series selectors of a PromQL expression: metric names with their label matchers.
 *
 * Hand-written because no PromQL parser is installed for Node (the official one, @prometheus-io/lezer-promql, is
 * not a dependency here); the syntax itself is checked by promtool in the same suite, so this only needs to find
 * selectors in expressions promtool accepts. It skips strings, durations and numbers, function and aggregation
 * names (an identifier followed by `(`), keywords, the label lists of by/without/on/ignoring/group_left/
 * group_right, and Grafana variables ($__rate_interval, $job, ${job}).
 */
export interface Matcher {
  name: string;
  op: '=' | '!=' | '=~' | '!~';
  value: string;
}
export interface Selector {
  metric: string;
  matchers: Matcher[];
}

const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan', 'atan2', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const LABEL_LIST_KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);

export function selectors(expr: string): Selector[] {
  const out: Selector[] = [];
  let i = 0;
  const n = expr.length;
  const skipSpace = () => {
    while (i < n && /\s/.test(expr[i])) i++;
  };
  const readString = (): string => {
    const quote = expr[i++];
    let value = '';
    while (i < n && expr[i] !== quote) {
      if (expr[i] === '\\' && quote !== '`') {
        value += expr[i + 1];
        i += 2;
      } else value += expr[i++];
    }
    if (i >= n) throw new Error(`unterminated string in: ${expr}`);
    i++;
    return value;
  };
  const skipParenthesised = () => {
    skipSpace();
    if (expr[i] !== '(') return;
    const close = expr.indexOf(')', i);
    if (close < 0) throw new Error(`unbalanced label list in: ${expr}`);
    i = close + 1;
  };
  const readMatchers = (): Matcher[] => {
    const matchers: Matcher[] = [];
    i++; // {
    for (;;) {
      skipSpace();
      if (expr[i] === '}') {
        i++;
        return matchers;
      }
      if (expr[i] === ',') {
        i++;
        continue;
      }
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(expr.slice(i));
      if (!m) throw new Error(`bad label matcher at ${i} in: ${expr}`);
      i += m[0].length;
      skipSpace();
      const op = /^(=~|!~|!=|=)/.exec(expr.slice(i));
      if (!op) throw new Error(`bad matcher operator at ${i} in: ${expr}`);
      i += op[0].length;
      skipSpace();
      if (!['"', "'", '`'].includes(expr[i])) throw new Error(`label value must be a string at ${i} in: ${expr}`);
      matchers.push({ name: m[0], op: op[0] as Matcher['op'], value: readString() });
    }
  };
  while (i < n) {
    const c = expr[i];
    if (/\s/.test(c) || '()+-*/%^,<>=!'.includes(c)) {
      i++;
    } else if (c === '"' || c === "'" || c === '`') {
      readString();
    } else if (c === '[') {
      const close = expr.indexOf(']', i);
      if (close < 0) throw new Error(`unbalanced [ in: ${expr}`);
      i = close + 1;
    } else if (c === '$') {
      i++;
      if (expr[i] === '{') i = expr.indexOf('}', i) + 1;
      else while (i < n && /[A-Za-z0-9_]/.test(expr[i])) i++;
    } else if (/[0-9.]/.test(c)) {
      while (i < n && /[0-9A-Za-z_.+]/.test(expr[i]) && !(expr[i] === '+' && !/[eE]/.test(expr[i - 1]))) i++;
    } else if (c === '{') {
      out.push({ metric: '', matchers: readMatchers() });
    } else if (/[A-Za-z_:]/.test(c)) {
      const m = /^[A-Za-z_:][A-Za-z0-9_:]*/.exec(expr.slice(i))!;
      i += m[0].length;
      const word = m[0];
      if (LABEL_LIST_KEYWORDS.has(word)) {
        skipParenthesised();
        continue;
      }
      if (KEYWORDS.has(word.toLowerCase())) continue;
      skipSpace();
      if (expr[i] === '(') continue; // a function or an aggregation
      if (/^(by|without)\b/.test(expr.slice(i))) continue; // `sum by (x) (...)`: an aggregation
      const matchers = expr[i] === '{' ? readMatchers() : [];
      out.push({ metric: word, matchers });
    } else {
      throw new Error(`unexpected character ${JSON.stringify(c)} at ${i} in: ${expr}`);
    }
  }
  return out;
}

import {
  buildMilvusExpr,
  escapeMilvusString,
  milvusDocumentExpr,
  milvusDocumentsExpr,
  milvusNumber,
  milvusScopeExpr,
  milvusString,
  milvusStringList,
} from './milvus-expr';

describe('milvus expression builder', () => {
  describe('string escaping', () => {
    it('escapes double quotes and backslashes', () => {
      expect(escapeMilvusString('say "hi"')).toBe('say \\"hi\\"');
      expect(escapeMilvusString('C:\\path\\x')).toBe('C:\\\\path\\\\x');
      expect(escapeMilvusString('\\"')).toBe('\\\\\\"');
      expect(milvusString('a"b\\c')).toBe('"a\\"b\\\\c"');
    });

    it('escapes newlines, tabs and other control characters', () => {
      expect(escapeMilvusString('a\nb\rc\td')).toBe('a\\nb\\rc\\td');
      expect(escapeMilvusString('x\u0000y\u001fz\u007f')).toBe('x\\u0000y\\u001fz\\u007f');
      expect(escapeMilvusString('\u2028')).toBe('\\u2028');
    });

    it('keeps single quotes, non-ASCII and astral characters as they are', () => {
      expect(escapeMilvusString("it's 首都 😀")).toBe("it's 首都 😀");
    });

    it('cannot be broken out of: an injected expression stays inside the literal', () => {
      const evil = '" || tenant != "';
      const expr = milvusScopeExpr({ tenant: evil });
      expect(expr).toBe('tenant == "\\" || tenant != \\""');
      // Unescaped quotes: only the two delimiters.
      expect(expr.replace(/\\\\/g, '').replace(/\\"/g, '').split('"').length - 1).toBe(2);
    });

    it('round-trips through JSON string decoding (same escape set as Go strconv.Unquote)', () => {
      for (const s of ['plain', 'q"uote', 'back\\slash', 'nl\nline', 'ctl\u0001', '中文', 'mixed "\\\n\t']) {
        expect(JSON.parse(milvusString(s))).toBe(s);
      }
    });

    it('string lists', () => {
      expect(milvusStringList(['a', 'b"c'])).toBe('["a", "b\\"c"]');
      expect(milvusStringList([])).toBe('[]');
    });
  });

  describe('number literals', () => {
    it('writes safe integers as integers and other numbers as floats', () => {
      expect(milvusNumber(5)).toBe('5');
      expect(milvusNumber(-3)).toBe('-3');
      expect(milvusNumber(-0)).toBe('0');
      expect(milvusNumber(0.25)).toBe('0.25');
      expect(milvusNumber(1e21)).toBe('1e+21');
      expect(milvusNumber(2 ** 60)).toMatch(/e\+18$/);
      expect(Number(milvusNumber(2 ** 60))).toBe(2 ** 60);
      expect(milvusNumber(1e-7)).toBe('1e-7');
    });

    it('rejects non-finite numbers', () => {
      expect(() => milvusNumber(Number.NaN)).toThrow();
      expect(() => milvusNumber(Number.POSITIVE_INFINITY)).toThrow();
    });
  });

  describe('scope', () => {
    it('tenant only when principals are undefined', () => {
      expect(buildMilvusExpr({ tenant: 'acme' })).toBe('tenant == "acme"');
    });

    it('ACL: the wildcard plus every principal, via array_contains_any', () => {
      expect(buildMilvusExpr({ tenant: 'acme', principals: ['g:eng', 'u:bob'] })).toBe(
        'tenant == "acme" && array_contains_any(acl, ["*", "g:eng", "u:bob"])',
      );
    });

    it('empty principals still admit public chunks only', () => {
      expect(buildMilvusExpr({ tenant: 't', principals: [] })).toBe('tenant == "t" && array_contains_any(acl, ["*"])');
    });

    it('does not repeat the wildcard when a caller passes it as a principal', () => {
      expect(buildMilvusExpr({ tenant: 't', principals: ['*', 'a'] })).toBe('tenant == "t" && array_contains_any(acl, ["*", "a"])');
    });
  });

  describe('metadata filters', () => {
    const scope = { tenant: 't' };

    it('string equality also matches string[] membership', () => {
      expect(buildMilvusExpr(scope, { team: 'search' })).toBe(
        'tenant == "t" && (metadata["team"] == "search" || json_contains(metadata["team"], "search"))',
      );
    });

    it('number equality is typed; string[] membership uses String(value)', () => {
      expect(buildMilvusExpr(scope, { year: 2024 })).toBe(
        'tenant == "t" && (metadata["year"] == 2024 || json_contains(metadata["year"], "2024"))',
      );
      expect(buildMilvusExpr(scope, { score: 0.5 })).toBe('tenant == "t" && (metadata["score"] == 0.5 || json_contains(metadata["score"], "0.5"))');
    });

    it('boolean equality', () => {
      expect(buildMilvusExpr(scope, { draft: false })).toBe(
        'tenant == "t" && (metadata["draft"] == false || json_contains(metadata["draft"], "false"))',
      );
    });

    it('in: homogeneous string and number lists plus array membership', () => {
      expect(buildMilvusExpr(scope, { lang: { in: ['en', 'zh', 3] } })).toBe(
        'tenant == "t" && (metadata["lang"] in ["en", "zh"] || metadata["lang"] in [3] || json_contains_any(metadata["lang"], ["en", "zh", "3"]))',
      );
      expect(buildMilvusExpr(scope, { n: { in: [1, 2] } })).toBe(
        'tenant == "t" && (metadata["n"] in [1, 2] || json_contains_any(metadata["n"], ["1", "2"]))',
      );
      expect(buildMilvusExpr(scope, { s: { in: ['x'] } })).toBe('tenant == "t" && (metadata["s"] in ["x"] || json_contains_any(metadata["s"], ["x"]))');
      // Integers and floats never share a list (Milvus asserts one literal type per list).
      expect(buildMilvusExpr(scope, { n: { in: [5, 2.5, 0] } })).toBe(
        'tenant == "t" && (metadata["n"] in [5, 0] || metadata["n"] in [2.5] || json_contains_any(metadata["n"], ["5", "2.5", "0"]))',
      );
    });

    it('ranges: every bound, ANDed', () => {
      expect(buildMilvusExpr(scope, { year: { gte: 2020, lt: 2025 } })).toBe('tenant == "t" && (metadata["year"] >= 2020 && metadata["year"] < 2025)');
      expect(buildMilvusExpr(scope, { p: { gt: -1.5, lte: 3 } })).toBe('tenant == "t" && (metadata["p"] > -1.5 && metadata["p"] <= 3)');
    });

    it('escapes keys and values', () => {
      expect(buildMilvusExpr(scope, { 'we"ird\\key': 'va"l\\ue' })).toBe(
        'tenant == "t" && (metadata["we\\"ird\\\\key"] == "va\\"l\\\\ue" || json_contains(metadata["we\\"ird\\\\key"], "va\\"l\\\\ue"))',
      );
    });

    it('ANDs several filters after the scope', () => {
      expect(buildMilvusExpr({ tenant: 't', principals: ['a'] }, { team: 'x', year: { gte: 1 } })).toBe(
        'tenant == "t" && array_contains_any(acl, ["*", "a"]) && (metadata["team"] == "x" || json_contains(metadata["team"], "x")) && (metadata["year"] >= 1)',
      );
    });
  });

  describe('document_id', () => {
    const scope = { tenant: 't' };

    it('string and in[] address the VarChar column', () => {
      expect(buildMilvusExpr(scope, { document_id: 'upload:1' })).toBe('tenant == "t" && document_id == "upload:1"');
      expect(buildMilvusExpr(scope, { document_id: { in: ['a', 'b', 7] } })).toBe('tenant == "t" && document_id in ["a", "b"]');
    });

    it('conditions that can never match a string id give null (no search at all)', () => {
      expect(buildMilvusExpr(scope, { document_id: 7 })).toBeNull();
      expect(buildMilvusExpr(scope, { document_id: true })).toBeNull();
      expect(buildMilvusExpr(scope, { document_id: { in: [1, 2] } })).toBeNull();
      expect(buildMilvusExpr(scope, { document_id: { gte: 1 } })).toBeNull();
    });

    it('document expressions for delete and count', () => {
      expect(milvusDocumentExpr('confluence:site:1')).toBe('document_id == "confluence:site:1"');
      expect(milvusDocumentExpr('d"x', 3)).toBe('document_id == "d\\"x" && version != 3');
    });

    it('several deletes in one expression: each document with its kept version, or one `in` over the ids', () => {
      expect(milvusDocumentsExpr([{ documentId: 'a', keepVersion: 2 }, { documentId: 'b"' }])).toBe('(document_id == "a" && version != 2) || (document_id == "b\\"")');
      expect(milvusDocumentsExpr([{ documentId: 'a' }, { documentId: 'b' }, { documentId: 'a' }])).toBe('document_id in ["a", "b"]');
      expect(() => milvusDocumentsExpr([])).toThrow(/no documents/);
    });
  });
});

/**
 * Citation refs in an answer, distinct, in order of first appearance. Understands "[1]", "[1][2]",
 * "[1, 2]", "[1，2]", "[1; 2]", ranges "[1-3]" / "[1–3]", full-width "［1］" and "【1】". Refs outside
 * 1..maxRef are ignored, as is anything that is not a pure list of numbers ("[a]", "[1.5]", "[see 2]").
 */
export function parseCitations(answer: string, maxRef: number): number[] {
  const out: number[] = [];
  const add = (n: number) => {
    if (Number.isInteger(n) && n >= 1 && n <= maxRef && !out.includes(n)) out.push(n);
  };
  const re = /[[［【]\s*(\d+(?:\s*(?:[,，、;；]|[-–—~～])\s*\d+)*)\s*[\]］】]/gu;
  for (const m of answer.matchAll(re)) {
    for (const part of m[1]!.split(/\s*[,，、;；]\s*/u)) {
      const range = /^(\d+)\s*[-–—~～]\s*(\d+)$/u.exec(part);
      if (range) {
        const from = Number(range[1]);
        const to = Number(range[2]);
        // A range is expanded only when it is short and ascending; "[1-1000]" is not a citation.
        if (to >= from && to - from < 20) for (let n = from; n <= to; n++) add(n);
        continue;
      }
      add(Number(part));
    }
  }
  return out;
}

import { z } from 'zod';
import { AppError } from './errors';
import { formatIssues, invalidRequest } from './validation-issues';

const issuesOf = (schema: z.ZodType, value: unknown) => {
  const r = schema.safeParse(value);
  if (r.success) throw new Error('expected a failure');
  return r.error.issues;
};

describe('validation issue formatting (one formatter for every edge)', () => {
  const schema = z.object({ question: z.string().min(1), filters: z.object({ tenant: z.string() }) });

  it('names each issue by its dotted path, the root by the given word, joined by "; "', () => {
    expect(formatIssues(issuesOf(schema, { question: '', filters: { tenant: 3 } }))).toMatch(/^question: .+; filters\.tenant: .+$/);
    expect(formatIssues(issuesOf(schema, 'text'))).toMatch(/^body: /);
    expect(formatIssues(issuesOf(z.number(), 'x'), 'value')).toMatch(/^value: /);
  });

  it('keeps only the first `limit` issues when asked', () => {
    const issues = issuesOf(z.array(z.number()), ['a', 'b', 'c']);
    expect(issues).toHaveLength(3);
    expect(formatIssues(issues, 'body', 2).split('; ')).toHaveLength(2);
  });

  it('builds an invalid_request AppError with the message and [{path, message}] details', () => {
    const e = invalidRequest(issuesOf(schema, { question: 'q', filters: {} }));
    expect(e).toBeInstanceOf(AppError);
    expect(e.code).toBe('invalid_request');
    expect(e.message).toMatch(/^filters\.tenant: /);
    expect(e.details).toEqual([{ path: 'filters.tenant', message: expect.any(String) }]);
  });
});

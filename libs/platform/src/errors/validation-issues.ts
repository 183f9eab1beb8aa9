import { AppError } from './errors';

/** The part of a zod issue (zod 3 or 4) these helpers read. */
export interface ValidationIssue {
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

const pathOf = (i: ValidationIssue): string => i.path.map(String).join('.');

/**
 * One line for a list of validation issues: `path: message` joined by `; `, the root named `root` (`body`, `value`,
 * `options`…) where the issue is about the whole value. `limit` keeps the first n issues (large payloads).
 */
export function formatIssues(issues: readonly ValidationIssue[], root = 'body', limit?: number): string {
  return (limit === undefined ? issues : issues.slice(0, limit)).map((i) => `${pathOf(i) || root}: ${i.message}`).join('; ');
}

/** A 400 `invalid_request` naming every issue, with `[{path, message}]` as the error's details (the API's `details`). */
export function invalidRequest(issues: readonly ValidationIssue[], root = 'body'): AppError {
  return new AppError(
    'invalid_request',
    formatIssues(issues, root),
    issues.map((i) => ({ path: pathOf(i), message: i.message })),
  );
}

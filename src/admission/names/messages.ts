// Message builders ported from k8s.io/apimachinery/pkg/util/validation (Kubernetes v1.37).
// The texts must match byte for byte: users compare annex's denials with the API server's.

/** `must be no more than <n> characters` (object names) or `… bytes` (label keys/values, 1.35+). */
export function maxLenError(length: number, unit: 'characters' | 'bytes' = 'characters'): string {
  return `must be no more than ${length} ${unit}`;
}

export function emptyError(): string {
  return 'must be non-empty';
}

/**
 * RegexError: each example is written `'x', ` and every example after the first is preceded by
 * ` or `, which yields the double space before "or" that Kubernetes prints.
 */
export function regexError(msg: string, regex: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${regex}')`;
  let out = `${msg} (e.g. `;
  examples.forEach((example, i) => {
    if (i > 0) out += ' or ';
    out += `'${example}', `;
  });
  return `${out}regex used for validation is '${regex}')`;
}

// The wording helpers every check shares, with Go's exact behaviour: PodSecurity's messages
// are compared byte for byte, so sorting and quoting must match `sets.List` and `%q`.
import type { Container, PodSpec } from './types.js';

/** `"a", "b"`: names wrapped in quotes without escaping (PodSecurity's joinQuote). */
export const joinQuote = (items: readonly string[]): string =>
  items.length === 0 ? '' : `"${items.join('", "')}"`;

export const plural = (one: string, many: string, n: number): string => (n === 1 ? one : many);

/** `container "a"` / `containers "a", "b"`. */
export const containersPhrase = (names: readonly string[]): string =>
  `${plural('container', 'containers', names.length)} ${joinQuote(names)}`;

/** Distinct values in Go's byte order (sets.List); code-unit order equals it below U+D800. */
export const sortedSet = (items: Iterable<string>): string[] =>
  [...new Set(items)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;
const ESCAPES: Record<string, string> = {
  '\x07': '\\a',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\v': '\\v',
  '\\': '\\\\',
  '"': '\\"',
};

/** Go's `%q` of a string (strconv.Quote): annotation values are printed with it. */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ESCAPES[ch]) out += ESCAPES[ch];
    else if (PRINTABLE.test(ch)) out += ch;
    else if (cp < 0x80) out += `\\x${cp.toString(16).padStart(2, '0')}`;
    else if (cp < 0x10000) out += `\\u${cp.toString(16).padStart(4, '0')}`;
    else out += `\\U${cp.toString(16).padStart(8, '0')}`;
  }
  return out + '"';
}

/** Init, regular, then ephemeral containers: the order PodSecurity visits (and names) them. */
export const allContainers = (spec: PodSpec): Container[] => [
  ...(spec.initContainers ?? []),
  ...(spec.containers ?? []),
  ...(spec.ephemeralContainers ?? []),
];

export const isWindows = (spec: PodSpec): boolean => spec.os?.name === 'windows';

/** `hostUsers: false` puts the pod in a user namespace, which relaxes some checks from v1.35. */
export const inUserNamespace = (spec: PodSpec): boolean => spec.hostUsers === false;

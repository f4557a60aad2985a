// YAML as `kubectl -o yaml` prints it: sigs.k8s.io/yaml → go-yaml v2. Map keys sorted with
// go-yaml's "natural" order, sequences not indented under their key, values quoted in go-yaml's
// style (double quotes when a plain string would read as another type, literal blocks for
// multi-line text). Known gap: go-yaml folds long plain strings at 80 columns; we never fold.
import { Document, isScalar, Scalar, visit } from 'yaml';

/** go-yaml v2 keyList.Less for strings: digit runs compare numerically, non-letters first. */
export function goYamlKeyCompare(a: string, b: string): number {
  const ar = Array.from(a);
  const br = Array.from(b);
  const isLetter = (c: string) => /\p{L}/u.test(c);
  const isDigit = (c: string | undefined) => c !== undefined && c >= '0' && c <= '9';
  for (let i = 0; i < ar.length && i < br.length; i += 1) {
    const ca = ar[i] ?? '';
    const cb = br[i] ?? '';
    if (ca === cb) continue;
    const al = isLetter(ca);
    const bl = isLetter(cb);
    if (al && bl) return ca < cb ? -1 : 1;
    if (al || bl) return bl ? -1 : 1;
    let an = 0n;
    let bn = 0n;
    if (ca === '0' || cb === '0') {
      for (let j = i - 1; j >= 0 && isDigit(ar[j]); j -= 1) {
        if (ar[j] !== '0') {
          an = 1n;
          bn = 1n;
          break;
        }
      }
    }
    let ai = i;
    for (; ai < ar.length && isDigit(ar[ai]); ai += 1) an = an * 10n + BigInt(ar[ai] ?? '0');
    let bi = i;
    for (; bi < br.length && isDigit(br[bi]); bi += 1) bn = bn * 10n + BigInt(br[bi] ?? '0');
    if (an !== bn) return an < bn ? -1 : 1;
    if (ai !== bi) return ai < bi ? -1 : 1;
    return ca < cb ? -1 : 1;
  }
  return ar.length - br.length;
}

const yaml11Special =
  /^(?:~|null|Null|NULL|y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|<<|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/;
const intLike = /^[-+]?(?:0b[01_]+|0x[0-9a-fA-F_]+|0o?[0-7_]+|[0-9][0-9_]*)$/;
const floatLike = /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/;
const base60 = /^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$/;
const timestamp =
  /^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)?$/;

/** go-yaml v2 `resolve`: would this plain text read back as something other than a string? */
function resolvesToNonString(s: string): boolean {
  return (
    s === '' ||
    yaml11Special.test(s) ||
    intLike.test(s) ||
    floatLike.test(s) ||
    base60.test(s) ||
    timestamp.test(s)
  );
}

// libyaml's printable set; anything else forces double quotes.
const nonPrintable = /[^\n\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/u;

function styleString(node: Scalar<string>): void {
  const s = node.value;
  if (nonPrintable.test(s)) node.type = Scalar.QUOTE_DOUBLE;
  else if (s.includes('\n')) {
    // A space next to a line break cannot be kept in a literal block.
    node.type = / \n|\n /.test(s) ? Scalar.QUOTE_DOUBLE : Scalar.BLOCK_LITERAL;
  } else if (resolvesToNonString(s)) node.type = Scalar.QUOTE_DOUBLE;
  else node.type = Scalar.PLAIN; // yaml falls back to single quotes when plain is impossible
}

/** One document as kubectl -o yaml prints it (ends with a newline, no `---`). */
export function toKubectlYaml(value: unknown): string {
  const doc = new Document(value, { version: '1.1' });
  visit(doc, {
    Map(_key, node) {
      node.items.sort((x, y) => {
        const kx = isScalar(x.key) ? String(x.key.value) : '';
        const ky = isScalar(y.key) ? String(y.key.value) : '';
        return goYamlKeyCompare(kx, ky);
      });
    },
    Scalar(_key, node) {
      if (typeof node.value === 'string') styleString(node as Scalar<string>);
    },
  });
  return doc.toString({
    indentSeq: false,
    lineWidth: 0,
    singleQuote: true,
    blockQuote: 'literal',
    nullStr: 'null',
    simpleKeys: false,
  });
}

/** Go's json.Marshal(Indent) of decoded JSON: map keys sorted by bytes, HTML characters escaped. */
export function goJson(value: unknown, indent = ''): string {
  const str = (x: unknown) =>
    JSON.stringify(x).replace(
      /[<>&\u2028\u2029]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
    );
  // Written by hand because JS objects iterate integer-like keys first, unlike Go maps.
  const enc = (v: unknown, pad: string): string => {
    const inner = indent === '' ? '' : `\n${pad}${indent}`;
    const close = indent === '' ? '' : `\n${pad}`;
    const colon = indent === '' ? ':' : ': ';
    if (Array.isArray(v)) {
      if (v.length === 0) return '[]';
      return `[${v.map((x) => inner + enc(x, pad + indent)).join(',')}${close}]`;
    }
    if (typeof v === 'object' && v !== null) {
      const entries = Object.entries(v).sort(([a], [b]) =>
        Buffer.compare(Buffer.from(a), Buffer.from(b)),
      );
      if (entries.length === 0) return '{}';
      const body = entries.map(([k, x]) => `${inner}${str(k)}${colon}${enc(x, pad + indent)}`);
      return `{${body.join(',')}${close}}`;
    }
    return str(v ?? null);
  };
  return enc(value, '');
}

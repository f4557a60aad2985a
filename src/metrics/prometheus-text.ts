// A strict parser for the Prometheus text exposition format 0.0.4, limited to what a kubelet's
// /metrics/resource emits: comments, HELP/TYPE, samples with escaped label values, a Go float
// value and an optional millisecond timestamp. Any syntax error rejects the whole body, as
// metrics-server does ("better to fail and inform the user than ... utilize corrupted data").

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
  /** Milliseconds since the epoch, when the line carries one. */
  timestampMs?: number;
}

/**
 * Says where and what, never the offending text: the message reaches logs (a kubelet that
 * answers garbage), and a body is data, not ours to copy there.
 */
export class ParseError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}: ${message}`);
    this.name = 'ParseError';
  }
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const FULL_METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /[a-zA-Z_][a-zA-Z0-9_]*/y;
const LABEL_VALUE = /"((?:[^"\\]|\\.)*)"/y;
const FLOAT = /^[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)$/;
const TIMESTAMP = /^\d{1,19}$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

/** Go strconv.ParseFloat for the forms exporters write (no hex floats, no underscores). */
export function parseGoFloat(text: string): number | undefined {
  if (FLOAT.test(text)) return Number(text);
  const lower = text.toLowerCase();
  if (lower === 'nan') return NaN;
  const unsigned = lower.replace(/^[+-]/, '');
  if (unsigned === 'inf' || unsigned === 'infinity') {
    return lower.startsWith('-') ? -Infinity : Infinity;
  }
  return undefined;
}

const isBlank = (c: string | undefined) => c === ' ' || c === '\t';

/**
 * Parse a text-format body. `wanted`, if given, limits the returned samples to these metric
 * names; every line is still checked so a corrupt body never yields partial data.
 */
export function parsePrometheusText(body: string, wanted?: ReadonlySet<string>): Sample[] {
  const samples: Sample[] = [];
  const lines = body.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      checkComment(line, i + 1);
      continue;
    }
    const sample = parseSampleLine(line, i + 1);
    if (!wanted || wanted.has(sample.name)) samples.push(sample);
  }
  return samples;
}

function checkComment(line: string, n: number): void {
  const parts = line
    .slice(1)
    .trimStart()
    .split(/[ \t]+/);
  const keyword = parts[0];
  if (keyword !== 'HELP' && keyword !== 'TYPE') return; // a plain comment
  const name = parts[1] ?? '';
  if (!FULL_METRIC_NAME.test(name)) {
    throw new ParseError(n, `invalid metric name in ${keyword} line`);
  }
  if (keyword === 'TYPE' && (parts.length !== 3 || !TYPES.has(parts[2] ?? ''))) {
    throw new ParseError(n, `invalid TYPE line`);
  }
}

function parseSampleLine(line: string, n: number): Sample {
  const nameMatch = METRIC_NAME.exec(line);
  if (!nameMatch) throw new ParseError(n, 'expected a metric name');
  const name = nameMatch[0];
  let pos = name.length;
  // No prototype: a label may legally be called __proto__.
  const labels: Record<string, string> = Object.create(null) as Record<string, string>;
  if (line[pos] === '{') pos = parseLabels(line, pos + 1, labels, n);
  const rest = line.slice(pos);
  if (!isBlank(rest[0])) throw new ParseError(n, `expected a space after the series of ${name}`);
  const fields = rest.trim().split(/[ \t]+/);
  if (fields.length < 1 || fields.length > 2) {
    throw new ParseError(n, `expected a value and an optional timestamp for ${name}`);
  }
  const value = parseGoFloat(fields[0] ?? '');
  if (value === undefined) throw new ParseError(n, `invalid value for ${name}`);
  const sample: Sample = { name, labels, value };
  if (fields.length === 2) {
    const ts = fields[1] ?? '';
    if (!TIMESTAMP.test(ts)) throw new ParseError(n, `invalid timestamp for ${name}`);
    sample.timestampMs = Number(ts);
  }
  return sample;
}

/** Parse `name="value",...}` from `pos`; returns the index after `}`. */
function parseLabels(line: string, start: number, out: Record<string, string>, n: number): number {
  let pos = start;
  const skipBlanks = () => {
    while (isBlank(line[pos])) pos++;
  };
  for (;;) {
    skipBlanks();
    if (line[pos] === '}') return pos + 1;
    LABEL_NAME.lastIndex = pos;
    const m = LABEL_NAME.exec(line);
    if (!m) throw new ParseError(n, 'invalid label name');
    const key = m[0];
    pos = LABEL_NAME.lastIndex;
    skipBlanks();
    if (line[pos] !== '=') throw new ParseError(n, `expected "=" after label ${key}`);
    pos++;
    skipBlanks();
    LABEL_VALUE.lastIndex = pos;
    const v = LABEL_VALUE.exec(line);
    if (!v) throw new ParseError(n, `expected a quoted value for label ${key}`);
    pos = LABEL_VALUE.lastIndex;
    const raw = v[1] ?? '';
    const value = raw.includes('\\') ? unescapeLabel(raw, key, n) : raw;
    if (Object.hasOwn(out, key)) throw new ParseError(n, `duplicate label ${key}`);
    out[key] = value;
    skipBlanks();
    if (line[pos] === ',') pos++;
    else if (line[pos] !== '}') throw new ParseError(n, `expected "," or "}" after label ${key}`);
  }
}

function unescapeLabel(raw: string, key: string, n: number): string {
  return raw.replace(/\\(.)/g, (_, c: string) => {
    if (c === '\\' || c === '"') return c;
    if (c === 'n') return '\n';
    throw new ParseError(n, `invalid escape "\\${c}" in label ${key}`);
  });
}

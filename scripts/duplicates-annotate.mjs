// Puts a reason beside each pair `duplicates` lists (its output on stdin; see
// scripts/duplicates.sh). Reasons come from docs/duplicates-reasons.txt, keyed by the two
// files (line numbers drift), or else from one rule: a pair whose both sides lie in their
// files' import header is two import lists, which the tool reads as code when they span
// lines. A pair with neither says so, to be fixed or given a reason.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './layers.mjs';

const REASONS = join(root, 'docs/duplicates-reasons.txt');
const reasons = new Map();
for (const line of readFileSync(REASONS, 'utf8').split('\n')) {
  const m = /^(\S+) ~ (\S+): (.+)$/.exec(line);
  if (m) reasons.set(`${m[1]} ~ ${m[2]}`, m[3]);
}

/** The last line (1-based) of a file's leading imports, blank lines and comments. */
const headerEnd = new Map();
function importHeaderEnd(file) {
  if (headerEnd.has(file)) return headerEnd.get(file);
  const lines = readFileSync(join(root, file), 'utf8').split('\n');
  let end = 0;
  let inImport = false;
  for (const [i, raw] of lines.entries()) {
    const l = raw.trim();
    if (inImport) {
      if (/\bfrom\s+['"]/.test(l) || /^['"].*['"];?$/.test(l)) inImport = false;
      end = i + 1;
    } else if (l === '' || l.startsWith('//') || l.startsWith('/*') || l.startsWith('*')) {
      continue;
    } else if (/^(import|export)\b.*\bfrom\s+['"]/.test(l) || /^import\s+['"]/.test(l)) {
      end = i + 1;
    } else if (/^(import|export)\s+(type\s+)?\{/.test(l)) {
      inImport = true;
      end = i + 1;
    } else break;
  }
  headerEnd.set(file, end);
  return end;
}

const ROW = /^(D\d+) (\S+):(\d+)-(\d+) ~ (\S+):(\d+)-(\d+)(.*)$/;
const input = readFileSync(0, 'utf8');
const out = [];
let unexplained = 0;
const used = new Set();
for (const line of input.split('\n')) {
  const m = ROW.exec(line);
  if (!m) {
    if (line) out.push(line);
    continue;
  }
  const [, , a, , aEnd, b, , bEnd] = m;
  const [x, y] = [a, b].sort();
  let reason = reasons.get(`${x} ~ ${y}`);
  used.add(`${x} ~ ${y}`);
  if (!reason && importHeaderEnd(a) >= Number(aEnd) && importHeaderEnd(b) >= Number(bEnd)) {
    reason = 'two import lists (named imports over several lines), not code';
  }
  if (!reason) unexplained++;
  out.push(
    `${line}  # ${reason ?? 'NO REASON YET: fix it, or give one in docs/duplicates-reasons.txt'}`,
  );
}
process.stdout.write(`${out.join('\n')}\n`);
if (unexplained) process.stderr.write(`${unexplained} pairs without a reason\n`);
const stale = [...reasons.keys()].filter((k) => !used.has(k));
if (stale.length) {
  process.stderr.write(
    `reasons for pairs no longer listed (remove them):\n  ${stale.join('\n  ')}\n`,
  );
}

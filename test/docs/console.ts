// The ```console blocks of README.md and docs/: each is a transcript (`$ command` lines, each
// followed by what it printed) and, with a `<!-- recorded: SCENE -->` line before it, a
// script that test/e2e/docs-console.test.ts runs in that scene and compares, normalised.
// A block no run here can produce says so: `<!-- not recorded: REASON -->`.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export type Marker = { recorded: string } | { notRecorded: string } | null;

export interface Step {
  command: string;
  /** Printed lines, as the doc shows them (trailing blank lines excluded). */
  output: string[];
  /** Blank lines after the output in the doc, kept when the block is re-recorded. */
  blanks: number;
}

export interface ConsoleBlock {
  file: string;
  /** 0-based index of the ```console line. */
  fence: number;
  /** 0-based index of the closing ``` line. */
  end: number;
  marker: Marker;
  steps: Step[];
}

const MARKER = /^<!-- (recorded|not recorded): (.+) -->$/;

export function consoleBlocks(file: string, text: string): ConsoleBlock[] {
  const lines = text.split('\n');
  const blocks: ConsoleBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== '```console') continue;
    let end = i + 1;
    while (end < lines.length && lines[end] !== '```') end++;
    const m = MARKER.exec(lines[i - 1] ?? '');
    const marker: Marker = !m
      ? null
      : m[1] === 'recorded'
        ? { recorded: m[2]! }
        : { notRecorded: m[2]! };
    blocks.push({ file, fence: i, end, marker, steps: parseSteps(lines.slice(i + 1, end)) });
    i = end;
  }
  return blocks;
}

function parseSteps(body: string[]): Step[] {
  const steps: Step[] = [];
  for (const line of body) {
    if (line.startsWith('$ ')) steps.push({ command: line.slice(2), output: [], blanks: 0 });
    else if (steps.length > 0) steps[steps.length - 1]!.output.push(line);
  }
  for (const s of steps) {
    while (s.output.length > 0 && s.output[s.output.length - 1] === '') {
      s.output.pop();
      s.blanks++;
    }
  }
  return steps;
}

/** README.md and every docs/*.md page, as repo-relative paths. */
export function docFiles(repo: string): string[] {
  const pages = readdirSync(join(repo, 'docs')).filter((f) => f.endsWith('.md'));
  return ['README.md', ...pages.sort().map((f) => `docs/${f}`)];
}

export function allConsoleBlocks(repo: string): ConsoleBlock[] {
  return docFiles(repo).flatMap((f) => consoleBlocks(f, readFileSync(join(repo, f), 'utf8')));
}

/**
 * A line of output stripped of what differs between two honest runs: ages and durations,
 * timestamps, generated names, uids, loopback ports, and column widths (kubectl pads a
 * column to its widest cell, so one age of another width moves every column after it).
 * Leading indentation is kept: in YAML it is meaning.
 */
export function normalise(line: string): string {
  return (
    line
      .trimEnd()
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<time>')
      .replace(/"time":\d{10,}/g, '"time":<time>')
      .replace(/\b\d{17}-[0-9a-f]{6}-\d+\b/g, '<event>')
      .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, '<uid>')
      .replace(/\b127\.0\.0\.1:\d+/g, '127.0.0.1:<port>')
      // Minutes alone of one or two digits: 125m or 1375m is a CPU quantity, compared.
      .replace(/(?<=^|[\s(])(\d+(\.\d+)?(ms|s|h|d)|\d{1,2}m)(\d+(ms|s|m))?(?=[\s),]|$)/g, '<age>')
      .replace(/\b\d+ ms\b/g, '<n> ms')
      // A live measurement in JSON: its shape is the doc's, its numbers this machine's.
      .replace(/"(cpu|memory)":"\d+(\.\d+)?[a-zA-Z]*"/g, '"$1":"<quantity>"')
      .replace(/(?<=")\d+(\.\d+)?(ms|s|m|h)(?=")/g, '<age>')
      .replace(/(\S)[ \t]{2,}(?=\S)/g, '$1 ')
  );
}

/** `...` or `…` alone on a line (indented, or followed by a note): any run of lines, none included. */
export function isElision(line: string): boolean {
  return /^\s*(\.\.\.|…)(\s.*)?$/.test(line);
}

/** Whether printed lines match a step's output in the doc, both normalised, elisions as wildcards. */
export function outputMatches(expected: string[], actual: string[]): boolean {
  const e = expected.map((l) => (isElision(l) ? null : normalise(l)));
  const a = actual.map(normalise);
  // memo[i][j]: e[i..] matches a[j..]
  const memo = new Map<number, boolean>();
  const match = (i: number, j: number): boolean => {
    const key = i * (a.length + 1) + j;
    const known = memo.get(key);
    if (known !== undefined) return known;
    let r: boolean;
    if (i === e.length) r = j === a.length;
    else if (e[i] === null) r = match(i + 1, j) || (j < a.length && match(i, j + 1));
    else r = j < a.length && e[i] === a[j] && match(i + 1, j + 1);
    memo.set(key, r);
    return r;
  };
  return match(0, 0);
}

/** Output lines as the doc shows them: trailing blank lines dropped, trailing spaces kept. */
export function outputLines(printed: string): string[] {
  const lines = printed.split('\n');
  while (lines.length > 0 && lines[lines.length - 1]!.trim() === '') lines.pop();
  return lines;
}

/** The block's body with each step's output replaced (the commands and blank lines kept). */
export function renderSteps(steps: Step[]): string[] {
  return steps.flatMap((s) => [`$ ${s.command}`, ...s.output, ...Array<string>(s.blanks).fill('')]);
}

/** The page's text with the bodies of the given blocks (keyed by fence line) replaced. */
export function replaceBodies(text: string, bodies: Map<number, string[]>): string {
  const lines = text.split('\n');
  const fences = [...bodies.keys()].sort((x, y) => y - x); // from the end: indexes stay valid
  for (const fence of fences) {
    let end = fence + 1;
    while (lines[end] !== '```') end++;
    lines.splice(fence + 1, end - fence - 1, ...bodies.get(fence)!);
  }
  return lines.join('\n');
}

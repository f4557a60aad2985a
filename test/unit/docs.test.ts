// The docs a newcomer starts from stay true to the tree: every relative link resolves, every
// page says first what it is for, docs/toolkit.md's table names every public export, and
// docs/dependencies.md's table every package at the version package.json pins; the README's
// `annex check` block is what `annex check` prints.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { checkObject, formatResult } from '../../src/cli/check.js';
import { loadPolicies } from '../../src/policy/load.js';

const repo = join(import.meta.dirname, '..', '..');
const read = (file: string) => readFileSync(join(repo, file), 'utf8');
const pages = readdirSync(join(repo, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => `docs/${f}`);

/** The lines of a page outside fenced code blocks. */
function prose(text: string): string[] {
  let code = false;
  return text.split('\n').filter((l) => {
    if (l.startsWith('```')) code = !code;
    return !code;
  });
}

describe('README.md and docs/', () => {
  it('README.md stays a first page: at most 300 lines', () => {
    expect(read('README.md').split('\n').length).toBeLessThanOrEqual(300);
  });

  it.each(['README.md', ...pages])('%s: every relative link resolves', (file) => {
    const broken = prose(read(file))
      .flatMap((l) => [...l.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!))
      .filter((t) => !/^[a-z]+:/.test(t) && !t.startsWith('#'))
      .filter((t) => !existsSync(join(repo, dirname(file), t.split('#')[0]!)));
    expect(broken).toEqual([]);
  });

  it.each(pages)('%s starts with one line saying what it is for', (file) => {
    const [first, second] = read(file).split('\n');
    expect(first).toMatch(/^[^#\s].*[.:]$/);
    expect(second).toBe('');
  });

  it("docs/toolkit.md's table names every export of src/index.ts", () => {
    const index = ts.createSourceFile('index.ts', read('src/index.ts'), ts.ScriptTarget.Latest);
    const names = index.statements.flatMap((s) =>
      ts.isExportDeclaration(s) && s.exportClause && ts.isNamedExports(s.exportClause)
        ? s.exportClause.elements.map((e) => e.name.text)
        : [],
    );
    expect(names.length).toBeGreaterThan(50);
    const table = read('docs/toolkit.md')
      .split('\n')
      .filter((l) => l.startsWith('| `'))
      .join('\n');
    expect(names.filter((n) => !table.includes(`\`${n}\``) && !table.includes(`\`${n}(`))).toEqual(
      [],
    );
  });

  it("docs/dependencies.md's table names every package of package.json, at its version", () => {
    const pkg = JSON.parse(read('package.json'));
    const pinned: Record<string, string> = { ...pkg.dependencies, ...pkg.devDependencies };
    const named = new Map<string, string>();
    for (const row of read('docs/dependencies.md').split('\n')) {
      const cells = row.split(' | ');
      if (cells.length < 3 || !row.startsWith('| ')) continue;
      const names = cells[0]!.slice(2).replace(' (dev)', '').split(', ');
      const versions = cells[1]!.split(', ');
      names.forEach((n, i) => named.set(n, versions[i]!));
    }
    for (const [name, version] of Object.entries(pinned))
      expect(named.get(name), name).toBe(version);
  });

  it("README's smallest policy: `annex check` prints what the block shows", () => {
    const readme = read('README.md');
    const at = readme.indexOf('\n## The smallest policy\n');
    const block = /```console\n\$ (.*)\n([\s\S]*?)```/.exec(readme.slice(at))!;
    const [, policy, object] = /^annex check -p (\S+) - <<<'(.*)'$/.exec(block[1]!)!;
    const policies = loadPolicies([join(repo, policy!)]);
    const result = checkObject(JSON.parse(object!), policies, 'stdin', { namespace: 'default' });
    expect(result.allowed).toBe(false); // exit 1, as the README says
    expect(formatResult(result)).toBe(block[2]);
  });
});

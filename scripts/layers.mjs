// The layering of src/ as docs/architecture.md writes it (its one place), and what
// scripts/import-graph.mjs and test/unit/layering.test.ts check against it: the imports
// between folders, the upward ones, and what the built-in features take from outside
// src/core and the public API.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const src = join(root, 'src');

/**
 * The table under "## Layers" in docs/architecture.md: [{ name, keys }], lower first. A
 * key is a folder of src/ ("kube") or a file at its top ("errors.ts").
 */
export function readLayers(doc = join(root, 'docs/architecture.md')) {
  const text = readFileSync(doc, 'utf8');
  const section = text.split(/^## Layers$/m)[1]?.split(/^## /m)[0] ?? '';
  const rows = section.split('\n').filter((l) => /^\| [a-z]/.test(l) && !l.startsWith('| layer |'));
  return rows.map((row) => {
    const [name, folders] = row
      .split('|')
      .slice(1, 3)
      .map((c) => c.trim());
    const keys = [...folders.matchAll(/`src\/([^`/]+)\/?`/g)].map((m) => m[1]);
    return { name, keys };
  });
}

export const LAYERS = readLayers();

/** The layer index of a key; -1 for a key the table does not name. */
export function layerOf(key) {
  return LAYERS.findIndex((l) => l.keys.includes(key));
}

/** The key of a path under `dir`: its first segment (a top file by its source name). */
export const keyOf = (path, dir = src) => relative(dir, path).split(sep)[0].replace(/\.js$/, '.ts');

/** Every source file of src/ but tests: a test may compose from above what it tests. */
export function* sources(dir = src) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* sources(p);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')) yield p;
  }
}

/**
 * The relative imports and re-exports of one file, as TypeScript parses them: the target's
 * source path and the names taken from it ('*' for a namespace or whole-module import,
 * 'default' for a default one). Type-only imports count: they tie the layers as much.
 */
export function importsOf(file) {
  const text = readFileSync(file, 'utf8');
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const out = [];
  const add = (spec, names) => {
    if (!spec.startsWith('.')) return;
    out.push({ target: resolve(dirname(file), spec).replace(/\.js$/, '.ts'), names });
  };
  const visit = (node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const c = node.importClause;
      const names = [];
      if (c?.name) names.push('default');
      const b = c?.namedBindings;
      if (b && ts.isNamespaceImport(b)) names.push('*');
      if (b && ts.isNamedImports(b)) {
        for (const e of b.elements) names.push((e.propertyName ?? e.name).text);
      }
      add(node.moduleSpecifier.text, c ? names : ['*']);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier) {
      const names =
        node.exportClause && ts.isNamedExports(node.exportClause)
          ? node.exportClause.elements.map((e) => (e.propertyName ?? e.name).text)
          : ['*'];
      add(node.moduleSpecifier.text, names);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      add(node.arguments[0].text, ['*']);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** Folder → folder import counts over `dir` (src/; tests excluded), and the upward ones. */
export function importGraph(dir = src, layers = LAYERS) {
  const layerOf = (key) => layers.findIndex((l) => l.keys.includes(key));
  const edges = new Map();
  const upward = [];
  for (const file of sources(dir)) {
    const from = keyOf(file, dir);
    for (const { target } of importsOf(file)) {
      if (!target.startsWith(dir + sep)) continue;
      const to = keyOf(target, dir);
      if (to === from) continue;
      edges.set(`${from} ${to}`, (edges.get(`${from} ${to}`) ?? 0) + 1);
      if (layerOf(to) > layerOf(from) || layerOf(to) < 0 || layerOf(from) < 0) {
        upward.push({ from, to, file: relative(root, file), target: relative(root, target) });
      }
    }
  }
  return { edges, upward };
}

/** The built-in features: plain users of the contract (src/core) and the public API (src/index.ts). */
export const BUILTIN_FEATURES = ['admission', 'conversion', 'metrics', 'scaling', 'policy'];

/**
 * What a built-in feature imports from outside its own folder that is neither in src/core
 * nor exported by src/index.ts: one entry per file, module and name.
 */
export function privateImports() {
  const index = join(src, 'index.ts');
  const publicNames = new Set();
  for (const { target, names } of importsOf(index)) {
    for (const n of names) publicNames.add(`${relative(root, target)}#${n}`);
  }
  const out = [];
  for (const file of sources()) {
    const from = keyOf(file);
    if (!BUILTIN_FEATURES.includes(from)) continue;
    for (const { target, names } of importsOf(file)) {
      if (!target.startsWith(src + sep)) continue;
      const to = keyOf(target);
      if (to === from || to === 'core') continue;
      const module = relative(root, target);
      for (const n of names) {
        if (publicNames.has(`${module}#${n}`) || publicNames.has(`${module}#*`)) continue;
        out.push({ feature: from, file: relative(root, file), module, name: n });
      }
    }
  }
  return out;
}

/**
 * What the built-in features still take from outside their folder that neither src/core nor
 * the public API offers, by feature and module, with why. The one list of exceptions: the
 * layering test fails on a private import not named here, and on an entry nothing needs.
 */
export const PRIVATE_IMPORTS = {
  'admission -> src/log.ts':
    "the review path's log redaction (logField, errorFields, flatLines, jsonType): a user's feature logs through FeatureContext.log instead",
  'admission -> src/json.ts':
    'the review envelope bounds depth and copies the object before a handler runs (nestsDeeperThan, cloneJson): review plumbing, not a feature; moves to core with one reviewEndpoint (issue 23 item 3)',
  'conversion -> src/log.ts':
    "the ConversionReview path's log redaction (logField, errorFields), as admission's",
  'conversion -> src/json.ts':
    "the ConversionReview envelope bounds depth (nestsDeeperThan), as admission's; same move",
  'policy -> src/json.ts':
    "compiling bounds a policy's nesting with the review path's nestsDeeperThan",
  'policy -> src/admission/webhook.ts':
    "a policy's match is the webhook matcher held equal to the API server's (ruleMatches, selectorMatches): one matcher",
  'policy -> src/admission/kinds.ts':
    "match.kinds resolves with the webhooks' table of built-in kinds (rulesForKinds): one table",
  'policy -> src/admission/names/index.ts':
    "denials quote apimachinery's field-error texts as the names webhook does (fieldErrorBody, OmittedValue)",
  'policy -> src/admission/defaults/index.ts':
    "podTemplateDefaults sees the pod template as the API server will, with annex defaults' code (defaultPodTemplateSpec)",
  'policy -> src/admission/defaults/input.ts':
    'the offline loader reads manifests as annex check and annex defaults do (readObjects)',
};

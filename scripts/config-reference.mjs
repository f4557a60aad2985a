// Renders docs/configuration.md from src/config/schema.ts: the key, type and default of every
// setting from the JSON Schema, its description from the `Config` interface's doc comment
// (or the schema's `description`); a section a built-in feature declares beside its code
// (SCHEMA_SOURCE_PATHS) is described by its own interface's comments. `npm run manifests`
// writes it; a unit test (test/unit/config-reference.test.ts) fails when the committed page
// drifts from this.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { stringify } from 'yaml';

export const CONFIG_REFERENCE_PATH = 'docs/configuration.md';
/** src/config/schema.ts, then the files where the built-in features declare their sections. */
export const SCHEMA_SOURCE_PATHS = [
  'src/config/schema.ts',
  'src/admission/config.ts',
  'src/metrics/config.ts',
  'src/policy/config.ts',
  'src/scaling/config.ts',
];

/** The text of those files, one after the other: what `docComments` reads. */
export const schemaSource = (root) =>
  SCHEMA_SOURCE_PATHS.map((p) => readFileSync(join(root, p), 'utf8')).join('\n');

const docOf = (node) =>
  ts
    .getJSDocCommentsAndTags(node)
    .filter(ts.isJSDoc)
    .map((d) => ts.getTextOfJSDocComment(d.comment) ?? '')
    .join(' ');

/**
 * Doc comments of the `Config` interface, by dotted key (`server.maxInFlight.review`). A key
 * typed by another interface of `source` (`metrics: MetricsConfig`) takes that interface's
 * comment when it has none of its own, and its members' below it.
 */
export function docComments(source) {
  const file = ts.createSourceFile('schema.ts', source, ts.ScriptTarget.Latest, true);
  const interfaces = new Map();
  ts.forEachChild(file, (n) => {
    if (ts.isInterfaceDeclaration(n)) interfaces.set(n.name.text, n);
  });
  const out = new Map();
  const walk = (members, prefix) => {
    for (const m of members) {
      if (!ts.isPropertySignature(m) || !m.name) continue;
      const key = prefix + m.name.getText(file);
      const named =
        m.type && ts.isTypeReferenceNode(m.type) && interfaces.get(m.type.typeName.getText(file));
      const text = docOf(m) || (named ? docOf(named) : '');
      if (text) out.set(key, text.replace(/\s+/g, ' ').trim());
      if (m.type && ts.isTypeLiteralNode(m.type)) walk(m.type.members, `${key}.`);
      if (named) walk(named.members, `${key}.`);
    }
  };
  walk(interfaces.get('Config').members, '');
  return out;
}

/** Every setting as { key, schema }, depth first, objects with properties before their keys. */
function settings(schema, prefix = '') {
  const rows = [];
  for (const [name, s] of Object.entries(schema.properties ?? {})) {
    const key = prefix + name;
    rows.push({ key, schema: s });
    if (s.type === 'object' && s.properties) rows.push(...settings(s, `${key}.`));
  }
  return rows;
}

const enumOf = (s) => s.enum?.map((v) => `\`${v}\``).join(' \\| ');

function typeOf(s) {
  if (s.type === 'array') return `list of ${enumOf(s.items) ?? s.items.type}`;
  const base = enumOf(s) ?? s.type;
  const limits = [
    s.minimum !== undefined && `≥ ${s.minimum}`,
    s.exclusiveMinimum !== undefined && `> ${s.exclusiveMinimum}`,
    s.maximum !== undefined && `≤ ${s.maximum}`,
    s.minLength === 1 && 'non-empty',
    s.minLength > 1 && `at least ${s.minLength} characters`,
    s.maxLength !== undefined && `at most ${s.maxLength} characters`,
  ].filter(Boolean);
  const items = s.type === 'array' && s.items.pattern ? `, each matching ${s.items.pattern}` : '';
  return `${base}${limits.length ? `, ${limits.join(', ')}` : ''}${items}`;
}

// `|` would end the cell; `<x>` would read as an HTML tag.
const cell = (text) => text.replaceAll('|', '\\|').replaceAll('<', '&lt;');

function defaultOf(s) {
  if (s.default === undefined) return 'unset';
  if (s.type === 'object') return '';
  return `\`${JSON.stringify(s.default)}\``;
}

/**
 * The page. `schema` is configSchema, `source` schemaSource's text, `defaults` the
 * configuration loaded from no file (what `annex serve` runs with by default).
 */
export function renderConfigReference({ schema, source, defaults }) {
  const docs = docComments(source);
  const lines = [
    'Every setting of annex: each key of the configuration file, its type, default and meaning.',
    '',
    '# Configuration',
    '',
    'Generated from `src/config/schema.ts` by `npm run manifests` (`scripts/config-reference.mjs`):',
    'edit the schema, not this page.',
    '',
    'One YAML file (`annex serve --config annex.yaml`), validated at start against the JSON',
    'Schema in `src/config/schema.ts`. A wrong field stops the start with its path',
    '(`invalid configuration in annex.yaml: server.port must be <= 65535`). Keys left out take',
    'their defaults; `manifests/config.yaml` is the configuration the install ships.',
    '',
  ];
  for (const [section, s] of Object.entries(schema.properties)) {
    lines.push(`## \`${section}\``, '');
    if (docs.has(section) || s.description) lines.push(docs.get(section) ?? s.description, '');
    // A section of named settings lists them; one of free keys (featureConfig) is one row.
    const rows =
      s.type === 'object' && s.properties
        ? settings(s, `${section}.`)
        : [{ key: section, schema: s }];
    lines.push('| key | type | default | description |', '| --- | --- | --- | --- |');
    for (const { key, schema: k } of rows) {
      const description = docs.get(key) ?? k.description ?? '';
      const type = k.type === 'object' ? 'object' : typeOf(k);
      lines.push(`| \`${key}\` | ${cell(type)} | ${defaultOf(k)} | ${cell(description)} |`);
    }
    lines.push('');
  }
  lines.push(
    '## Every default, as one file',
    '',
    '```yaml',
    stringify(defaults, { lineWidth: 0 }).trimEnd(),
    '```',
    '',
  );
  return lines.join('\n');
}

/** Keys without a description anywhere (the test requires none). */
export function undescribed({ schema, source }) {
  const docs = docComments(source);
  return settings(schema)
    .filter(({ key, schema: s }) => !docs.has(key) && !s.description)
    .map(({ key }) => key);
}

// Run directly (after `npm run build`): write the page from the built schema.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const { configSchema } = await import(new URL('../dist/config/schema.js', import.meta.url));
  const { loadConfig } = await import(new URL('../dist/config/load.js', import.meta.url));
  const source = schemaSource(root);
  const text = renderConfigReference({ schema: configSchema, source, defaults: loadConfig() });
  writeFileSync(root + CONFIG_REFERENCE_PATH, text);
  process.stdout.write(`wrote ${CONFIG_REFERENCE_PATH}\n`);
}

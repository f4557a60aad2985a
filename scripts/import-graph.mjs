#!/usr/bin/env node
// The import graph of src/ by folder: each folder, the folders it imports (with how many
// import statements), the imports that go upward in the layering of docs/architecture.md
// ("## Layers"), and what the built-in features take from outside their folder that
// neither src/core nor the public API offers. Test files are left out: a test may compose
// from above what it tests.
// Usage: node scripts/import-graph.mjs [--files]   (--files: each such import, by file)
import { importGraph, layerOf, LAYERS, privateImports, PRIVATE_IMPORTS } from './layers.mjs';

const say = (line) => process.stdout.write(`${line}\n`);
const files = process.argv.includes('--files');
const { edges, upward } = importGraph();
const byFrom = new Map();
for (const [key, count] of edges) {
  const [from, to] = key.split(' ');
  const up = upward.some((u) => u.from === from && u.to === to) ? '!' : '';
  if (!byFrom.has(from)) byFrom.set(from, []);
  byFrom.get(from).push(`${to}${up} ${count}`);
}
const order = [...byFrom.keys()].sort((a, b) => layerOf(a) - layerOf(b) || a.localeCompare(b));
const layer = (key) => LAYERS[layerOf(key)]?.name ?? 'no layer';
say('folder (layer) -> folders it imports with import counts ("!" = upward)');
for (const from of order) say(`${from} (${layer(from)}) -> ${byFrom.get(from).join(', ')}`);

const count = (list, key) => {
  const m = new Map();
  for (const x of list) m.set(key(x), (m.get(key(x)) ?? 0) + 1);
  return m;
};
say(`\nupward imports: ${upward.length}`);
for (const [pair, n] of count(upward, (u) => `${u.from} -> ${u.to}`)) say(`  ${pair} (${n})`);
if (files) for (const u of upward) say(`    ${u.file} imports ${u.target}`);

const priv = privateImports();
say(`\nbuilt-in features' names from outside src/core and src/index.ts: ${priv.length}`);
for (const [pair, n] of count(priv, (p) => `${p.feature} -> ${p.module}`)) {
  const reason = PRIVATE_IMPORTS[pair];
  say(`  ${pair} (${n})${reason ? '' : ' NOT LISTED in scripts/layers.mjs'}`);
}
if (files) for (const p of priv) say(`    ${p.file}: ${p.name} from ${p.module}`);

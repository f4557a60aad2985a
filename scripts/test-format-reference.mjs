// Writes the `annex test` file format reference into docs/policies.md, between its
// `<!-- generated: annex test format -->` and `<!-- end generated -->` lines, from the
// schema the command validates test files with (src/cli/policy-tests-schema.ts, built).
// `npm run manifests` runs it; src/cli/policy-tests.test.ts fails when the page drifts.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const page = fileURLToPath(new URL('../docs/policies.md', import.meta.url));
const { formatReference } = await import(
  new URL('../dist/cli/policy-tests-schema.js', import.meta.url)
);
const text = readFileSync(page, 'utf8');
const section = /(<!-- generated: annex test format -->\n)[\s\S]*?(<!-- end generated -->)/;
if (!section.test(text)) throw new Error(`${page}: no generated annex test format section`);
writeFileSync(
  page,
  text.replace(section, (_, open, close) => `${open}${formatReference()}\n${close}`),
);
process.stdout.write('wrote the annex test format of docs/policies.md\n');

// `annex policy cel FILE...`: for each AdmissionPolicy, the Validating/MutatingAdmissionPolicy
// and binding the API server would enforce it with (YAML, ready for kubectl apply -f -), or
// the reason it stays on annex's webhook (as a YAML comment, so the output still applies).
import type { Command } from 'commander';
import { stringify } from 'yaml';
import { compileToCel, explainCel } from '../policy/cel/index.js';
import { loadPolicies } from '../policy/load.js';

const yaml = (o: unknown) => stringify(o, { aliasDuplicateObjects: false, lineWidth: 0 });

/** The YAML stream for the policies: generated objects, or one `# <policy>: <reason>` line each. */
export function celYaml(files: readonly string[], annexNamespace?: string): string {
  const docs: string[] = [];
  for (const p of loadPolicies(files)) {
    const opts = annexNamespace ? { annexNamespace } : {};
    const r = compileToCel(p, opts);
    // Per rule, for a policy of several rules: each one's own reason to stay on the webhook.
    const several = p.validate.length + p.mutate.length > 1;
    const rules = explainCel(p, opts).filter(
      (e) => several && e.runsIn === 'webhook' && !e.reason?.startsWith('the policy'),
    );
    if ('reason' in r) {
      const perRule = rules.map((e) => `#   ${e.kind} rule "${e.rule}": ${e.reason}\n`).join('');
      docs.push(`# AdmissionPolicy ${p.name} runs in the webhook: ${r.reason}\n${perRule}`);
    } else {
      const objects = [r.vap, r.binding, r.map, r.mapBinding].filter((o) => o !== undefined);
      docs.push(`# AdmissionPolicy ${p.name}\n${objects.map(yaml).join('---\n')}`);
    }
  }
  return docs.join('---\n');
}

export function register(program: Command): void {
  const policy = program.command('policy').description('AdmissionPolicy tools');
  policy
    .command('cel')
    .description(
      'print the ValidatingAdmissionPolicy + binding each AdmissionPolicy compiles to, or why it stays on the webhook',
    )
    .argument('<files...>', 'AdmissionPolicy files or folders, or - for stdin')
    .option('--annex-namespace <namespace>', "annex's own namespace (never subject to policies)")
    .action((files: string[], opts: { annexNamespace?: string }) => {
      process.stdout.write(celYaml(files, opts.annexNamespace));
    });
}

// Differential test of what is pure in policies: `annex check` with a dns1123Label policy
// on ConfigMap names must answer with the same causes and the same kubectl text as the real
// API server gives for Services, whose names are RFC 1123 labels by the server's own rule
// (v1.37.2). The corpus holds only valid DNS-1123 subdomains, so the ConfigMap's built-in
// validation passes and the policy is what decides. One `annex check` run for the whole
// corpus; one dry-run create per name; real kubectl for three names, to prove the text.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { stringify } from 'yaml';
import { validateName } from '../../src/admission/names/index.js';
import type { Status } from '../../src/apiserver/status.js';
import { kubectlInvalidText, type CheckResult } from '../../src/cli/check.js';
import { policyCrd } from '../../src/policy/crd.js';
import { apiRequest, createNamespace, describeCluster, kubectl } from '../cluster/harness.js';
import { nameCorpus } from '../fixtures/name-corpus.js';

const cli = join(import.meta.dirname, '..', '..', 'dist', 'cli', 'main.js');
const run = promisify(execFile);

/** Also checked with real kubectl: allowed, one cause, two causes. */
const KUBECTL_NAMES = ['web', 'web.front', `${'a'.repeat(40)}.${'b'.repeat(30)}`];

/** ~100 valid subdomains: the shared corpus's, then dotted and long ones of a seeded generator. */
function subdomainCorpus(): string[] {
  const valid = nameCorpus().filter((n) => validateName('dns1123-subdomain', n).length === 0);
  let seed = 0x10c;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  const label = () => {
    const len = 1 + rand(rand(4) === 0 ? 70 : 12);
    let s = '';
    for (let i = 0; i < len; i++) s += 'abcxyz0189-'[rand(11)];
    return s.replace(/^-+|-+$/g, '') || 'a';
  };
  const generated: string[] = [];
  while (generated.length < 70) {
    const parts = Array.from({ length: 1 + rand(3) }, label);
    const name = parts.join('.');
    if (validateName('dns1123-subdomain', name).length === 0) generated.push(name);
  }
  return [...new Set([...KUBECTL_NAMES, ...valid.slice(0, 40), ...generated])].slice(0, 100);
}

const policy = {
  apiVersion: 'policy.annex.dev/v1alpha1',
  kind: 'AdmissionPolicy',
  metadata: { name: 'label-names' },
  spec: {
    match: { kinds: ['ConfigMap'] },
    validate: [{ name: 'label', path: '$.metadata.name', nameRule: 'dns1123Label' }],
  },
};

const service = (name: string) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name },
  spec: { type: 'ExternalName', externalName: 'localhost' },
});

describeCluster('policy name rules: annex check vs the real API server', () => {
  const corpus = subdomainCorpus();
  const dir = mkdtempSync(join(tmpdir(), 'annex-policy-diff-'));
  const policyFile = join(dir, 'policy.yaml');
  const objectsFile = join(dir, 'configmaps.yaml');
  writeFileSync(policyFile, stringify(policy));
  writeFileSync(
    objectsFile,
    stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: corpus.map((name) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } })),
    }),
  );

  /** annex check, once for the corpus (exit 1: some are denied). */
  async function annexCheck(): Promise<Map<string, CheckResult>> {
    const r = await run(
      process.execPath,
      [cli, 'check', '-p', policyFile, objectsFile, '-o', 'json'],
      {
        maxBuffer: 64 << 20,
      },
    ).catch((e: { code: number; stdout: string }) => {
      expect(e.code).toBe(1);
      return e;
    });
    const out = JSON.parse(r.stdout) as { results: CheckResult[] };
    return new Map(out.results.map((x) => [x.name, x]));
  }

  it(`gives the server's causes and kubectl text for every name (${corpus.length} names)`, async () => {
    expect(corpus.length).toBeGreaterThanOrEqual(90);
    const ns = await createNamespace('polnames');
    const ours = await annexCheck();
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    const mismatches: string[] = [];
    let denied = 0;
    const queue = [...corpus];
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
          const r = await apiRequest('POST', `/api/v1/namespaces/${ns}/services?dryRun=All`, {
            body: service(name),
            agent,
          });
          const mine = ours.get(name);
          let server: string;
          let annex: string;
          if (r.status === 201) {
            server = 'allowed';
            annex = mine?.allowed ? 'allowed' : `denied: ${mine?.message}`;
          } else if (r.status === 422) {
            denied++;
            const status = r.json() as Status;
            const causes = (status.details?.causes ?? []).map((c) => `${c.field}: ${c.message}`);
            const ourCauses = (mine?.status?.details?.causes ?? []).map(
              (c) => `${c.field}: ${c.message}`,
            );
            server = `${JSON.stringify(causes)}\n${kubectlInvalidText(status).replace(/^The Service /, 'The ConfigMap ')}`;
            annex = `${JSON.stringify(ourCauses)}\n${mine?.message}`;
          } else {
            server = `HTTP ${r.status}: ${r.body}`;
            annex = '';
          }
          if (server !== annex)
            mismatches.push(`${JSON.stringify(name)}\n  server: ${server}\n  annex:  ${annex}`);
        }
      }),
    );
    agent.destroy();
    expect(mismatches.slice(0, 5).join('\n')).toBe('');
    expect(denied).toBeGreaterThan(25);
    expect(corpus.length - denied).toBeGreaterThan(25);
    console.log(
      `policy names differential: ${corpus.length} names, ${denied} denied, 0 mismatches`,
    );
  });

  it('prints what real kubectl prints (allowed, one cause, two causes)', async () => {
    const ns = await createNamespace('polkubectl');
    const ours = await annexCheck();
    for (const name of KUBECTL_NAMES) {
      const k = await kubectl(['-n', ns, 'apply', '--dry-run=server', '-f', '-'], {
        input: JSON.stringify(service(name)),
      });
      const mine = ours.get(name);
      const kubectlText = (k.code === 0 ? k.stdout : k.stderr).trimEnd();
      expect(
        mine?.message
          .replace(/^configmap\//, 'service/')
          .replace(/^The ConfigMap /, 'The Service '),
      ).toBe(kubectlText);
    }
    expect(ours.get(KUBECTL_NAMES[2]!)?.status?.details?.causes).toHaveLength(2);
  });

  it('the AdmissionPolicy CRD is structural: the API server accepts it (dry run)', async () => {
    // A server-side apply dry run validates the whole CRD whether or not another test
    // has installed it already (a create would be 409 then).
    const crd = policyCrd() as { metadata: { name: string } };
    const r = await apiRequest(
      'PATCH',
      `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}?dryRun=All&fieldManager=annex-test&force=true`,
      { body: crd, headers: { 'content-type': 'application/apply-patch+yaml' } },
    );
    expect(`${r.status} ${r.status < 300 ? '' : r.body}`).toMatch(/^20[01] $/);
  });

  it('a policy that does not compile: one line naming the rule, exit 1, no stack', async () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(
      bad,
      stringify({
        ...policy,
        spec: { ...policy.spec, validate: [{ name: 'x', path: '$.a', nameRule: 'dnsLabel' }] },
      }),
    );
    const e = await run(process.execPath, [cli, 'check', '-p', bad, objectsFile]).catch(
      (err: { code: number; stderr: string }) => err,
    );
    expect((e as { code: number }).code).toBe(1);
    expect(e.stderr).toBe(
      `annex: ${bad}: AdmissionPolicy "label-names": rule "x": unknown name rule "dnsLabel": expected one of dns1123Subdomain, dns1123Label, dns1035Label, qualifiedName, labelKey, labelValue, pathSegment\n`,
    );
  });
});

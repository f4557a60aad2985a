// Differential test of what is pure in policies, both ways annex installs a policy, each
// side from a real run (the annex CLI, the real API server v1.37.2):
// - the rule itself: `annex check --no-native` (the webhook's answer) with a dns1123Label
//   policy on ConfigMap names gives the causes and kubectl text the API server gives for
//   Services, whose names are RFC 1123 labels by the server's own rule;
// - as installed (policy.native, the default): `annex check` gives the Status (message,
//   reason, code, details, causes) and kubectl text of the API server enforcing the
//   ValidatingAdmissionPolicy + binding annex generates for the same policy.
// The corpus holds only valid DNS-1123 subdomains, so the ConfigMap's built-in validation
// passes and the policy is what decides. One `annex check` run per way for the whole
// corpus; one dry-run create per name; real kubectl for three names, to prove the text.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { validateName } from '../../src/admission/names/index.js';
import type { Status } from '../../src/core/status.js';
import { kubectlInvalidText, type CheckResult } from '../../src/cli/check.js';
import { celObjects } from '../../src/policy/cel/index.js';
import { compilePolicy } from '../../src/policy/compile.js';
import { policyCrd } from '../../src/policy/crd.js';
import {
  apiRequest,
  createNamespace,
  describeCluster,
  kubectl,
  kubectlOk,
  type RawResponse,
} from '../cluster/harness.js';
import { eventually } from '../cluster/kubelet.js';
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

/** The policy, confined to `namespace` when given (the VAP's namespaceSelector then). */
const policyIn = (namespace?: string) => ({
  ...policy,
  spec: {
    ...policy.spec,
    match: { ...policy.spec.match, ...(namespace ? { namespaces: [namespace] } : {}) },
  },
});

/** JSON with sorted keys: the API server's order is its structs', annex's is insertion. */
const canonical = (v: unknown): string =>
  JSON.stringify(v, (_, x: unknown) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1)))
      : x,
  );

const causesOf = (s: Status | undefined) =>
  JSON.stringify((s?.details?.causes ?? []).map((c) => `${c.field ?? ''}: ${c.message ?? ''}`));

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
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  /** The namespace where the API server enforces the generated VAP, and what was applied. */
  let nativeNs = '';
  let vapObjects: { kind: string; metadata: { name: string } }[] = [];

  /** annex check, once for the corpus (exit 1: some are denied). */
  async function annexCheck(args: string[], policyPath = policyFile) {
    const r = await run(
      process.execPath,
      [cli, 'check', '-p', policyPath, objectsFile, '-o', 'json', ...args],
      { maxBuffer: 64 << 20 },
    ).catch((e: { code: number; stdout: string }) => {
      expect(e.code).toBe(1);
      return e;
    });
    const out = JSON.parse(r.stdout) as { results: CheckResult[] };
    return new Map(out.results.map((x) => [x.name, x]));
  }

  /** `fn` over the corpus, 8 at a time. */
  async function eachName(fn: (name: string) => Promise<void>): Promise<void> {
    const queue = [...corpus];
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let name = queue.shift(); name !== undefined; name = queue.shift()) await fn(name);
      }),
    );
  }

  beforeAll(async () => {
    // The objects the live feature applies for this policy (celObjects, as in feature.ts),
    // confined to one namespace so that nothing else in the cluster is refused.
    nativeNs = await createNamespace('polnative');
    const compiled = compilePolicy(policyIn(nativeNs));
    const cel = celObjects([compiled]).get(compiled.name);
    expect(cel?.vap && cel.binding).toBeTruthy();
    vapObjects = [cel!.vap, cel!.binding] as typeof vapObjects;
    writeFileSync(join(dir, 'native-policy.yaml'), stringify(policyIn(nativeNs)));
    await kubectlOk(['apply', '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: vapObjects }),
    });
    // Enforcement starts when the API server has loaded the policy and its binding.
    await eventually(async () => {
      const r = await apiRequest('POST', `/api/v1/namespaces/${nativeNs}/configmaps?dryRun=All`, {
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'web.front' } },
      });
      return r.status === 422 ? true : undefined;
    }, 30_000);
  }, 60_000);

  afterAll(async () => {
    agent.destroy();
    for (const o of [...vapObjects].reverse())
      await kubectl(['delete', o.kind, o.metadata.name, '--ignore-not-found']);
    if (nativeNs) await kubectl(['delete', 'namespace', nativeNs, '--wait=false']);
  });

  /**
   * Over the corpus: the server's answer to `send(name)` against annex check's result, a
   * refusal rendered by `server` and `annex`. Returns the mismatches and the 422s.
   */
  async function differ(
    ours: Map<string, CheckResult>,
    send: (name: string) => Promise<RawResponse>,
    server: (r: RawResponse) => string,
    annex: (mine: CheckResult | undefined) => string,
  ): Promise<{ mismatches: string[]; denied: number }> {
    const mismatches: string[] = [];
    let denied = 0;
    await eachName(async (name) => {
      const r = await send(name);
      const mine = ours.get(name);
      if (r.status === 422) denied++;
      const theirs = r.status === 201 ? 'allowed' : server(r);
      const our = mine?.allowed ? 'allowed' : annex(mine);
      if (theirs !== our)
        mismatches.push(`${JSON.stringify(name)}\n  server: ${theirs}\n  annex:  ${our}`);
    });
    expect(mismatches.slice(0, 5).join('\n')).toBe('');
    expect(denied).toBeGreaterThan(25);
    expect(corpus.length - denied).toBeGreaterThan(25);
    return { mismatches, denied };
  }

  it(`the rule (--no-native) gives the server's own causes and kubectl text for every name (${corpus.length} names)`, async () => {
    expect(corpus.length).toBeGreaterThanOrEqual(90);
    const ns = await createNamespace('polnames');
    const { denied } = await differ(
      await annexCheck(['--no-native']),
      (name) =>
        apiRequest('POST', `/api/v1/namespaces/${ns}/services?dryRun=All`, {
          body: service(name),
          agent,
        }),
      (r) => {
        if (r.status !== 422) return `HTTP ${r.status}: ${r.body}`;
        const status = r.json() as Status;
        return `${causesOf(status)}\n${kubectlInvalidText(status).replace(/^The Service /, 'The ConfigMap ')}`;
      },
      (mine) => `${causesOf(mine?.status)}\n${mine?.message}`,
    );
    await kubectl(['delete', 'namespace', ns, '--wait=false']);
    console.log(`policy names differential (rule): ${corpus.length} names, ${denied} denied`);
  });

  it(`as installed (native) it gives the Status of the API server enforcing annex's ValidatingAdmissionPolicy (${corpus.length} names)`, async () => {
    // The whole Status (message, reason, code, details with name, kind, causes) and its text.
    const { denied } = await differ(
      await annexCheck(['-n', nativeNs], join(dir, 'native-policy.yaml')),
      (name) =>
        apiRequest('POST', `/api/v1/namespaces/${nativeNs}/configmaps?dryRun=All`, {
          body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } },
          agent,
        }),
      (r) => `${r.status} ${canonical(r.json())}\n${kubectlInvalidText(r.json() as Status)}`,
      (mine) => `${mine?.status?.code} ${canonical(mine?.status)}\n${mine?.message}`,
    );
    console.log(`policy names differential (native): ${corpus.length} names, ${denied} denied`);
  });

  it('prints what real kubectl prints, both ways (allowed, one cause, two causes)', async () => {
    const ns = await createNamespace('polkubectl');
    const rule = await annexCheck(['--no-native']);
    const native = await annexCheck(['-n', nativeNs], join(dir, 'native-policy.yaml'));
    const text = (k: { code: number; stdout: string; stderr: string }) =>
      (k.code === 0 ? k.stdout : k.stderr).trimEnd();
    for (const name of KUBECTL_NAMES) {
      const svc = await kubectl(['-n', ns, 'create', '--dry-run=server', '-f', '-'], {
        input: JSON.stringify(service(name)),
      });
      expect(
        rule
          .get(name)
          ?.message.replace(/^configmap\//, 'service/')
          .replace(/^The ConfigMap /, 'The Service '),
      ).toBe(text(svc));
      const cm = await kubectl(['-n', nativeNs, 'create', '--dry-run=server', '-f', '-'], {
        input: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } }),
      });
      expect(native.get(name)?.message).toBe(text(cm));
    }
    await kubectl(['delete', 'namespace', ns, '--wait=false']);
    expect(rule.get(KUBECTL_NAMES[2]!)?.status?.details?.causes).toHaveLength(2);
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

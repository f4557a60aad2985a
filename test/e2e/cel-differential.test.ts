// Differential test of CEL rules: each case of test/fixtures/cel-corpus.ts is one
// AdmissionPolicy, compiled to its ValidatingAdmissionPolicy + binding (the text verbatim)
// and installed in the real kube-apiserver, selecting only Deployments labelled with its
// case number; every generated Deployment is dry-run-created once per case over HTTP, and
// the API server's verdict and message are compared with annex's in-process evaluation of
// the same policy on the same (defaulted) object, with annex check's as-installed answer,
// and with `annex check --vap`'s: the installed VAPs and bindings as `kubectl get -o yaml`
// prints them, read back through src/policy/vap/. Mismatches are reported, then asserted.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { applyDefaults } from '../../src/admission/defaults/index.js';
import type { AdmissionRequest } from '../../src/admission/review.js';
import { bindingName, compileToCel, POLICY_LABEL, vapName } from '../../src/policy/cel/index.js';
import { compilePolicy, type CompiledPolicy } from '../../src/policy/compile.js';
import { evaluate } from '../../src/policy/evaluate.js';
import { evaluateAsInstalled } from '../../src/policy/as-installed.js';
import { evaluateVaps, loadVaps, type VapSet } from '../../src/policy/vap/index.js';
import { applyObjects } from '../cluster/annex.js';
import { until } from '../cluster/direct.js';
import {
  apiRequest,
  createNamespace,
  describeCluster,
  kubectl,
  kubectlOk,
} from '../cluster/harness.js';
import { celCases, celObjects, type CelCase } from '../fixtures/cel-corpus.js';

const OBJECTS = Number(process.env.ANNEX_CEL_OBJECTS ?? 200);
const CONCURRENCY = 8;
const LABEL = 'cel-case';
const report = (line: string) => console.error(`cel-differential: ${line}`);

interface Verdict {
  allowed: boolean;
  message: string;
  /** The whole Status message (the API server's; annex check's as-installed answer). */
  full?: string;
  /** annex check --vap's whole Status message, from the installed VAP + binding read back. */
  vap?: string;
}

const sortKeys = (v: any): any =>
  Array.isArray(v)
    ? v.map(sortKeys)
    : v && typeof v === 'object'
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, sortKeys(v[k])]),
        )
      : v;

describeCluster('CEL rules: annex in-process against the API server', () => {
  let ns = '';
  const policies: CompiledPolicy[] = [];
  let vaps: VapSet;
  const nsLabels = () => ({ 'kubernetes.io/metadata.name': ns, tier: 'batch' });

  beforeAll(async () => {
    ns = await createNamespace('celdiff');
    await kubectlOk(['label', 'namespace', ns, 'tier=batch']);
    const sentinel: CelCase = {
      covers: 'sentinel',
      rule: { expression: 'false', message: 'sentinel' },
    };
    const objs: any[] = [];
    for (const [i, c] of [...celCases, sentinel].entries()) {
      const p = compilePolicy({
        apiVersion: 'policy.annex.dev/v1alpha1',
        kind: 'AdmissionPolicy',
        metadata: { name: `celdiff-${i}` },
        spec: {
          match: {
            kinds: ['apps/Deployment'],
            namespaces: [ns],
            objectSelector: { matchLabels: { [LABEL]: String(i) } },
          },
          failurePolicy: 'Fail',
          ...(c.variables ? { variables: c.variables } : {}),
          ...(c.matchConditions ? { matchConditions: c.matchConditions } : {}),
          validate: [{ name: 'rule', ...c.rule }],
        },
      });
      policies.push(p);
      const cel = compileToCel(p);
      if ('reason' in cel) throw new Error(`case ${i} is not native: ${cel.reason}`);
      objs.push(cel.vap, cel.binding);
    }
    await applyObjects(objs);
    // The API server loads policies asynchronously: wait until the last one (the sentinel) denies.
    const probe = celObjects(1, 1)[0]!;
    await until(
      'the sentinel VAP denies',
      async () => (await dryRun(probe, policies.length - 1)).message === 'sentinel',
    );
    // The installed objects, as `kubectl get -o yaml` prints them, read as `annex check --vap DIR`.
    const dir = mkdtempSync(join(tmpdir(), 'annex-celdiff-vap-'));
    const names = policies.map((p) => p.name);
    writeFileSync(
      join(dir, 'policies.yaml'),
      await kubectlOk(['get', 'validatingadmissionpolicies', ...names.map(vapName), '-o', 'yaml']),
    );
    writeFileSync(
      join(dir, 'bindings.yaml'),
      await kubectlOk([
        'get',
        'validatingadmissionpolicybindings',
        ...names.map(bindingName),
        '-o',
        'yaml',
      ]),
    );
    vaps = loadVaps([dir]);
    if (vaps.notes.length) throw new Error(`--vap notes: ${vaps.notes.join('; ')}`);
  }, 180_000);

  afterAll(async () => {
    for (const kind of ['validatingadmissionpolicybindings', 'validatingadmissionpolicies'])
      await kubectl(['delete', kind, '-l', POLICY_LABEL, '--ignore-not-found']);
    await kubectl(['delete', 'namespace', ns, '--wait=false']);
  });

  const labelled = (o: any, i: number | string) => ({
    ...o,
    metadata: {
      ...o.metadata,
      namespace: ns,
      labels: { ...o.metadata.labels, [LABEL]: String(i) },
    },
  });

  /** The API server's answer; the message is what follows `denied request: `. */
  async function dryRun(o: any, i: number): Promise<Verdict> {
    const r = await apiRequest('POST', `/apis/apps/v1/namespaces/${ns}/deployments?dryRun=All`, {
      body: labelled(o, i),
    });
    if (r.status === 201 || r.status === 200) return { allowed: true, message: '' };
    const message = String(r.json().message ?? r.body);
    const at = message.indexOf('denied request: ');
    return {
      full: message,
      allowed: false,
      message: at < 0 ? `(not a VAP denial) ${message}` : message.slice(at + 16),
    };
  }

  /** annex's answer, on the object as the API server defaults it; an error's text without annex's cause prefix. */
  function inProcess(o: any, i: number): Verdict {
    const object = applyDefaults(labelled(o, i));
    const req = {
      uid: 'u',
      kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
      resource: { group: 'apps', version: 'v1', resource: 'deployments' },
      requestKind: { group: 'apps', version: 'v1', kind: 'Deployment' },
      requestResource: { group: 'apps', version: 'v1', resource: 'deployments' },
      name: o.metadata.name,
      namespace: ns,
      operation: 'CREATE',
      userInfo: {},
      object,
      oldObject: null,
      dryRun: true,
    } as unknown as AdmissionRequest;
    const e = evaluate([policies[i]!], req, { namespaceLabels: nsLabels() });
    // annex check --vap's answer: every installed VAP, as the API server has them.
    const vap = evaluateVaps(vaps, req, { namespaceLabels: nsLabels() }).status?.message;
    if (e.allowed) return { allowed: true, message: '', ...(vap !== undefined ? { vap } : {}) };
    const m = e.decisions[0]?.causes[0]?.message ?? '';
    // annex check's answer as the cluster installs the policy (natively, as a VAP).
    const full = evaluateAsInstalled([policies[i]!], req, {}, { namespaceLabels: nsLabels() })
      .status?.message;
    return {
      allowed: false,
      message: m.replace(/^Internal error: rule "[^"]+": /, ''),
      full,
      ...(vap !== undefined ? { vap } : {}),
    };
  }

  /**
   * The object as the API server hands it to CEL: defaulted and re-serialized from its Go
   * type, which drops zero values (`hostNetwork: false`). Dry-run-created with no case
   * selecting it; its count of differences from annex's own defaulting is reported.
   */
  async function asServed(o: any): Promise<any> {
    const r = await apiRequest('POST', `/apis/apps/v1/namespaces/${ns}/deployments?dryRun=All`, {
      body: labelled(o, 'none'),
    });
    if (r.status !== 201) throw new Error(`dry-run of ${o.metadata.name}: ${r.status} ${r.body}`);
    const served = r.json();
    for (const k of ['uid', 'creationTimestamp', 'generation', 'managedFields', 'resourceVersion'])
      delete served.metadata[k];
    delete served.status;
    delete served.metadata.labels[LABEL];
    served.metadata.namespace = undefined;
    return served;
  }

  it('agrees with the API server on every (rule, object) pair', async () => {
    const generated = celObjects(OBJECTS);
    const objects = await Promise.all(generated.map(asServed));
    const defaultsDiffer = generated.filter((o, k) => {
      const mine = applyDefaults(labelled(o, 'none'));
      const theirs = labelled(objects[k], 'none');
      return JSON.stringify(sortKeys(mine.spec)) !== JSON.stringify(sortKeys(theirs.spec));
    }).length;
    report(
      `${defaultsDiffer} of ${generated.length} objects: annex's applyDefaults differs from the API server's object (spec)`,
    );
    const pairs = celCases.flatMap((_, i) => objects.map((o) => [i, o] as const));
    const mismatches: string[] = [];
    const verdictOnly: string[] = [];
    const viaVap: string[] = [];
    let denied = 0;
    let next = 0;
    const worker = async () => {
      while (next < pairs.length) {
        const [i, o] = pairs[next++]!;
        const live = await dryRun(o, i);
        const mine = inProcess(o, i);
        if (!live.allowed) denied++;
        const where = `case ${i} (${celCases[i]!.covers}) on ${o.metadata.name}`;
        if (live.full !== mine.vap) {
          viaVap.push(
            `${where}: API server ${JSON.stringify(live.full ?? 'allowed')}, annex check --vap ${JSON.stringify(mine.vap ?? 'allowed')}`,
          );
        }
        if (live.allowed !== mine.allowed) {
          mismatches.push(
            `${where}: API server ${JSON.stringify(live)}, annex ${JSON.stringify(mine)}`,
          );
        } else if (live.message !== mine.message || live.full !== mine.full) {
          verdictOnly.push(
            `${where}: API server ${JSON.stringify(live.full)}, annex ${JSON.stringify(mine.full)} (webhook message ${JSON.stringify(mine.message)})`,
          );
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    report(
      `${celCases.length} rules × ${objects.length} objects = ${pairs.length} pairs; ${denied} denied by the API server`,
    );
    report(
      `verdict mismatches: ${mismatches.length}; same verdict, different message: ${verdictOnly.length}`,
    );
    report(
      `annex check --vap (${vaps.policies.length} installed VAPs read back): ${pairs.length} pairs compared, ${viaVap.length} mismatches (verdict or whole message)`,
    );
    const byCase = new Map<string, string[]>();
    for (const m of [...mismatches, ...verdictOnly, ...viaVap]) {
      const k = m.slice(0, m.indexOf(' on '));
      byCase.set(k, [...(byCase.get(k) ?? []), m]);
    }
    for (const [k, ms] of byCase) report(`${k}: ${ms.length}× e.g. ${ms[0]}`);
    expect({ mismatches, verdictOnly, viaVap }).toEqual({
      mismatches: [],
      verdictOnly: [],
      viaVap: [],
    });
  }, 600_000);
});

// Which protocol the real kube-apiserver speaks to annex, read from annex's own debug
// access log (its `proto` field is the request's HTTP version): admission webhook and
// CRD conversion calls arrive over HTTP/1.1 (the API server's webhook client does not
// offer h2: annex offers h2 first, and these connections still negotiate http/1.1),
// aggregated API requests over HTTP/2 (the aggregator's proxy negotiates h2). annex's
// benchmarks measure each path over the protocol it gets here, and its one listener is
// judged by that split (docs/architecture.md, "One port, two protocols"): if a
// kube-apiserver release changes either, this file fails and says which.
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import crontab from '../../examples/crontab/feature.js';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import { declarationsOf, renderObjects, serviceRefOf } from '../../src/manifests/render.js';
import {
  applyObjects,
  deleteObjects,
  ensureAnnexService,
  pointAtTestAnnex,
  registerApiServices,
  repoManifest,
  startTestAnnex,
  type TestAnnex,
} from '../cluster/annex.js';
import {
  createNamespace,
  describeCluster,
  kubectl,
  kubectlOk,
  waitForCondition,
} from '../cluster/harness.js';
import { eventually } from '../cluster/kubelet.js';

const CRD = 'crontabs.example.com';

interface Line {
  method: string;
  path: string;
  code: number;
  proto: string;
}

describeCluster('protocols the kube-apiserver uses to reach annex', () => {
  let annex: TestAnnex;
  let ns: string;
  let registered: any[] = [];
  let log = '';
  const sink = new PassThrough();
  sink.on('data', (d: Buffer) => (log += d.toString()));
  /** The access log's request lines so far whose path starts with `prefix`. */
  const requests = (prefix: string): Line[] =>
    log
      .split('\n')
      .filter((l) => l.includes('"msg":"request"'))
      .map((l) => JSON.parse(l) as Line)
      .filter((l) => l.path.startsWith(prefix));
  const protos = (lines: Line[]) => [...new Set(lines.map((l) => l.proto))];

  beforeAll(async () => {
    await kubectl(['wait', '--for=delete', `crd/${CRD}`, '--timeout=60s']);
    annex = await startTestAnnex({}, [crontab], {
      log: createLogger('debug', sink),
    });
    await ensureAnnexService();
    ns = await createNamespace('proto');
    const crd = renderObjects(declarationsOf([crontab]), serviceRefOf(loadConfig({}))).filter(
      (o: any) => o.kind === 'CustomResourceDefinition',
    );
    registered = pointAtTestAnnex(
      [
        ...repoManifest('webhooks/validating-names.yaml'),
        ...repoManifest('webhooks/mutating-defaults.yaml'),
        ...crd,
      ],
      annex.port,
      annex.caBundle,
    );
    await applyObjects(registered);
    await waitForCondition([`crd/${CRD}`], 'Established');
    registered.push(
      ...(await registerApiServices('apiservice/metrics-annex-dev/apiservice.yaml', annex)),
    );
  });

  afterAll(async () => {
    await deleteObjects(registered);
    await annex?.stop();
  });

  it('admission webhook calls arrive over HTTP/1.1', async () => {
    // Both webhooks run on a dry-run create once the API server has loaded them.
    await eventually(async () => {
      const r = await kubectl([
        '-n',
        ns,
        'create',
        'deployment',
        'p.x',
        '--image=x',
        '--dry-run=server',
      ]);
      return r.stderr.includes('names.annex.dev') ? true : undefined;
    });
    const validate = requests('/validate/');
    const mutate = requests('/mutate/');
    expect(validate.length).toBeGreaterThan(0);
    expect(mutate.length).toBeGreaterThan(0);
    expect(protos(validate)).toEqual(['1.1']);
    expect(protos(mutate)).toEqual(['1.1']);
  });

  it('CRD conversion calls arrive over HTTP/1.1', async () => {
    // Written through v1 (stored as v1beta1), read through v1: two conversions at least.
    await eventually(() =>
      kubectlOk(['create', '-f', '-'], {
        input: JSON.stringify({
          apiVersion: 'example.com/v1',
          kind: 'CronTab',
          metadata: { name: 'c', namespace: ns },
          host: 'db',
          port: '5432',
          time: '02:00',
        }),
      }),
    );
    await kubectlOk(['-n', ns, 'get', 'crontabs.v1.example.com', 'c', '-o', 'json']);
    const convert = requests('/convert/');
    expect(convert.length).toBeGreaterThan(0);
    expect(convert.every((l) => l.code === 200)).toBe(true);
    expect(protos(convert)).toEqual(['1.1']);
  });

  it('aggregated API requests arrive over HTTP/2 through the aggregator', async () => {
    const before = requests('/apis/metrics.annex.dev/v1beta1/nodes').length;
    JSON.parse(await kubectlOk(['get', '--raw', '/apis/metrics.annex.dev/v1beta1/nodes']));
    const lines = requests('/apis/metrics.annex.dev/v1beta1/nodes');
    expect(lines.length).toBe(before + 1);
    expect(lines.at(-1)).toMatchObject({ method: 'GET', code: 200, proto: '2.0' });
    // Discovery and availability checks the aggregator sends on its own go the same way.
    expect(protos(requests('/apis/'))).toEqual(['2.0']);
  });
});

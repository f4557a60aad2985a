// Policy evaluation benchmark: CPU per request of evaluate() for 1, 10 and 100
// AdmissionPolicies that all match a 10 KB Deployment, beside a bare reference measured
// in the same run — JSON.parse + JSON.stringify of the same AdmissionReview, what any
// webhook does per request (bench/webhook/servers/bare.mjs). Read the ratios: this machine is
// noisy. Then the webhook bench's 10 policies, 10 CEL rules and the two Pod Security levels
// on the same review. In-process,
// single thread. Usage: npm run build && node bench/policy.bench.mjs
import { compilePolicy } from '../dist/policy/compile.js';
import { evaluate } from '../dist/policy/evaluate.js';
import { loadPolicies } from '../dist/policy/load.js';
import { deploymentReview, numberedUid } from './reviews.mjs';

const TARGET_BYTES = 10 * 1024;
const COUNTS = [1, 10, 100];
const SECONDS = Number(process.env.BENCH_SECONDS ?? 1);

/** Review i: a Deployment padded to TARGET_BYTES, the policies' shorter review (bench/reviews.mjs). */
const review = (i) =>
  deploymentReview({
    bytes: TARGET_BYTES,
    i,
    deployment: {
      labels: { app: 'web', 'app.kubernetes.io/name': 'web' },
      annotations: null,
      replicas: 3,
      containers: [
        { name: 'web', image: 'nginx:1.27', env: [] },
        { name: 'sidecar', image: 'envoy:1.31', env: [] },
      ],
      podSpec: null,
    },
    review: {
      uid: numberedUid(i, '00000000-0000-0000-0000-'),
      userInfo: { username: 'bench' },
      full: false,
    },
    pad: {},
  });

/** Four kinds of rule, cycled: a name rule, a schema on every image, a required label, a mutation. */
function policy(i) {
  const spec = { match: { kinds: ['apps/Deployment'] } };
  const kind = i % 4;
  if (kind === 0) {
    spec.validate = [{ name: 'name', path: '$.metadata.name', nameRule: 'dns1123Label' }];
  } else if (kind === 1) {
    spec.validate = [
      {
        name: 'images',
        path: '$.spec.template.spec.containers[*].image',
        schema: { type: 'string', pattern: `^[^@]*:(?!latest$)[^:/@]+$` },
      },
    ];
  } else if (kind === 2) {
    spec.validate = [
      { name: 'label', path: "$.metadata.labels['app.kubernetes.io/name']", required: true },
    ];
  } else {
    spec.mutate = [
      {
        name: 'requests',
        path: '$.spec.template.spec.containers[*]',
        setIfAbsent: { resources: { requests: { cpu: `${100 + i}m` } } },
      },
    ];
  }
  return compilePolicy({
    apiVersion: 'policy.annex.dev/v1alpha1',
    kind: 'AdmissionPolicy',
    metadata: { name: `p-${i}` },
    spec,
  });
}

/** CPU microseconds per call of fn(i), run for SECONDS after a warm-up. */
function perCall(fn) {
  for (let i = 0; i < 200; i++) fn(i);
  let n = 0;
  const start = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  while (Number(process.hrtime.bigint() - t0) / 1e9 < SECONDS || n < 50) fn(n++);
  const u = process.cpuUsage(start);
  return (u.user + u.system) / n;
}

const texts = Array.from({ length: 16 }, (_, i) => review(i));
const requests = texts.map((t) => JSON.parse(t).request);
let sink = 0;

const bare = perCall((i) => {
  const r = JSON.parse(texts[i % texts.length]);
  sink += JSON.stringify({
    apiVersion: r.apiVersion,
    kind: 'AdmissionReview',
    response: { uid: r.request.uid, allowed: true },
  }).length;
});
const rows = COUNTS.map((count) => {
  const policies = Array.from({ length: count }, (_, i) => policy(i));
  const us = perCall((i) => {
    const e = evaluate(policies, requests[i % requests.length]);
    if (!e.allowed) throw new Error(`bench policies must allow: ${JSON.stringify(e.status)}`);
    sink += e.decisions.length;
  });
  return { count, us };
});

// The webhook bench's 10 policies (bench/webhook/servers/index.mjs: the demo policies and
// five more), in-process on the same review: six of their paths descend (`$..hostPID`).
const here = import.meta.dirname;
const webhookSet = loadPolicies([`${here}/../policies`, `${here}/webhook/servers/annex-policies`]);
const webhookSetUs = perCall((i) => {
  sink += evaluate(webhookSet, requests[i % requests.length]).decisions.length;
});

// Kubernetes' own policy languages on the same review: one policy of 10 CEL rules (allows),
// and the Pod Security Standards on the template (baseline allows, restricted denies: the
// bench Deployment sets no securityContext, so its cost includes building the message).
const c = 'object.spec.template.spec.containers';
const CEL = [
  'object.spec.replicas <= 10',
  `${c}.all(x, x.image.contains(':'))`,
  "'app' in object.metadata.labels",
  'object.metadata.name.size() < 64',
  '!has(object.spec.template.spec.hostNetwork) || !object.spec.template.spec.hostNetwork',
  `${c}.all(x, !x.image.endsWith(':latest'))`,
  `${c}.size() <= 5`,
  "object.metadata.name.matches('^[a-z0-9-]+$')",
  `${c}.exists(x, x.name == 'web')`,
  `${c}.map(x, x.name).size() == ${c}.size()`,
];
const single = (name, validate) =>
  compilePolicy({
    apiVersion: 'policy.annex.dev/v1alpha1',
    kind: 'AdmissionPolicy',
    metadata: { name },
    spec: { match: { kinds: ['apps/Deployment'] }, validate },
  });
const languages = [
  [
    '10 CEL rules (one policy)',
    single(
      'cel',
      CEL.map((expression, k) => ({ name: `r${k}`, expression })),
    ),
  ],
  ['Pod Security baseline', single('pss-b', [{ name: 'pss', podSecurity: { level: 'baseline' } }])],
  [
    'Pod Security restricted (denies)',
    single('pss-r', [{ name: 'pss', podSecurity: { level: 'restricted' } }]),
  ],
].map(([label, p]) => ({
  label,
  us: perCall((i) => {
    sink += evaluate([p], requests[i % requests.length]).decisions.length;
  }),
}));

const f = (x) => x.toFixed(1);
console.log(
  `policy evaluation: ${(texts[0].length / 1024).toFixed(1)} KB Deployment review, every policy matching, ${SECONDS}s per cell, CPU per request`,
);
console.log(`bare reference (JSON.parse + stringify of the review): ${f(bare)} µs`);
console.log('policies | evaluate CPU/req | ratio to bare | per policy');
for (const { count, us } of rows) {
  console.log(`${count} | ${f(us)} µs | ${f(us / bare)}x | ${f(us / count)} µs`);
}
console.log(
  `the webhook bench's ${webhookSet.length} policies (policies/, bench/webhook/servers/annex-policies/) | ${f(webhookSetUs)} µs | ${f(webhookSetUs / bare)}x`,
);
console.log('rules | evaluate CPU/req | ratio to bare');
for (const { label, us } of languages) console.log(`${label} | ${f(us)} µs | ${f(us / bare)}x`);
if (sink < 0) console.log(sink);

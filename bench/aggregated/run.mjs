// Aggregated API scenarios (issue 13, item 3), in one run against a real etcd +
// kube-apiserver on loopback, annex serving 10,000 PodMetrics (bench/aggregated/server.mjs):
//   list  10,000 PodMetrics straight from annex (HTTP/1.1 and HTTP/2, the aggregator's
//         protocol) and through the kube-apiserver (aggregator → annex over HTTP/2), beside
//         the kube-apiserver's own list of 10,000 ConfigMaps of about the same size;
//   get   one PodMetrics through the kube-apiserver, beside one ConfigMap;
//   table the same lists as Table (Accept: application/json;as=Table;v=v1;g=meta.k8s.io);
//   watch 100 watchers through the kube-apiserver; one change, until all 100 have it,
//         beside 100 ConfigMap watchers and one ConfigMap update.
// The subjects and the reference alternate request by request, every round.
//
// What is timed: the wall time of one client request, from sending it to its last body
// byte (the client is this process, over one keep-alive connection), and the CPU
// (utime+stime from /proc, all threads) that annex, kube-apiserver and etcd spent per
// request. The target ratio (≤ 0.5) is on wall time through the kube-apiserver: it is what
// a client (kubectl top, the HPA) waits for, and both lists cross the same kube-apiserver,
// so the ratio is the aggregated path's cost against the built-in one. CPU ratios are given
// beside it (annex + kube-apiserver for the proxied list against kube-apiserver + etcd).
//
//   npm run build && node bench/aggregated/run.mjs [rounds=3] [--quick]
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent } from 'node:https';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { cpuMs, h2session, median, send, watchers } from './client.mjs';

const dist = new URL('../../dist/', import.meta.url);
const PODS = 10_000;
const WATCHERS = 100;
const GROUP = 'aggregated';
const POD_PATH = '/apis/metrics.annex.dev/v1beta1/pods';
const CM_PATH = '/api/v1/namespaces/bench/configmaps';
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io';

/** annex (bench/aggregated/server.mjs) as a child; resolves with it and its stdout lines. */
async function startServer(kubeconfig, certsDir) {
  const child = spawn(
    process.execPath,
    [
      ...(process.env.ANNEX_BENCH_CPU_PROF
        ? ['--cpu-prof', `--cpu-prof-dir=${process.env.ANNEX_BENCH_CPU_PROF}`]
        : []),
      fileURLToPath(new URL('server.mjs', import.meta.url)),
      kubeconfig,
      certsDir,
      String(PODS),
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = [];
  let wake = () => {};
  createInterface({ input: child.stdout }).on('line', (l) => {
    lines.push(JSON.parse(l));
    wake();
  });
  const exited = new Promise((_, reject) =>
    child.once('exit', (code) => reject(new Error(`bench annex exited (${code})`))),
  );
  const nextLine = () =>
    Promise.race([
      exited,
      new Promise((resolve) => {
        if (lines.length) return resolve(lines.shift());
        wake = () => ((wake = () => {}), resolve(lines.shift()));
      }),
    ]);
  const { port } = await nextLine();
  return {
    child,
    port,
    /** Sends a command; resolves with the server's answer. */
    command: (line) => {
      child.stdin.write(`${line}\n`);
      return nextLine();
    },
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.removeAllListeners('exit');
        child.once('exit', resolve);
        child.kill('SIGTERM');
      }),
  };
}

/** 10,000 ConfigMaps about the size of a PodMetrics, 16 requests in flight. */
async function createConfigMaps(api, log) {
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < PODS) {
        const i = next++;
        const body = JSON.stringify({
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: {
            name: `cm-${String(i).padStart(5, '0')}`,
            labels: { app: `app-${i % 50}` },
          },
          // The same numbers a PodMetrics carries: the lists come out within a few % in size.
          data: { cpu: `${250_000_000 + i}n`, memory: `${102_400 + i * 4}Ki`, window: '15s' },
        });
        const r = await send(api, {
          method: 'POST',
          path: CM_PATH,
          headers: { 'content-type': 'application/json' },
          body,
        });
        if (r.status !== 201) throw new Error(`create configmap: ${r.status} ${r.body}`);
      }
    }),
  );
  log(`created ${PODS} ConfigMaps in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

/**
 * Rounds of interleaved requests: every round sends `perRound` requests of each subject in
 * turn and keeps, per subject, the round's median wall time and mean CPU per request of
 * each process.
 */
async function compare(subjects, procs, rounds, perRound, check) {
  for (const s of subjects) {
    const r = await send(s.target, s.req);
    if (r.status !== 200)
      throw new Error(`${s.name}: ${r.status} ${r.body.toString().slice(0, 300)}`);
    check?.(s, r.body);
  }
  const out = subjects.map(() => ({
    wall: [],
    cpu: procs.map(() => []),
    bytes: 0,
  }));
  for (let round = 0; round < rounds; round++) {
    const times = subjects.map(() => []);
    const cpu = subjects.map(() => procs.map(() => 0));
    for (let i = 0; i < perRound; i++) {
      for (const [j, s] of subjects.entries()) {
        await s.before?.();
        const c0 = procs.map((p) => cpuMs(p.pid));
        const t0 = performance.now();
        const r = await send(s.target, s.req);
        times[j].push(performance.now() - t0);
        procs.forEach((p, k) => (cpu[j][k] += cpuMs(p.pid) - c0[k]));
        out[j].bytes = r.body.length;
      }
    }
    subjects.forEach((_, j) => {
      out[j].wall.push(median(times[j]));
      procs.forEach((_, k) => out[j].cpu[k].push(cpu[j][k] / perRound));
    });
  }
  return out;
}

/** Rows for one scenario: wall ms, CPU ms per process, response size. */
function rowsOf(scenario, subjects, procs, results) {
  const rows = [];
  subjects.forEach((s, j) => {
    const r = results[j];
    const row = (metric, unit, values) =>
      rows.push({ group: GROUP, scenario, subject: s.name, metric, unit, values });
    row('wall p50', 'ms', r.wall);
    procs.forEach((p, k) => {
      if (s.charge.includes(p.name)) row(`${p.name} CPU`, 'ms/req', r.cpu[k]);
    });
    if (r.bytes > 10_000)
      row(
        'response',
        'MB',
        r.wall.map(() => r.bytes / 2 ** 20),
      );
  });
  return rows;
}

const perRoundRatio = (a, b) => a.map((x, i) => x / b[i]);
const sumCpu = (r, procs, names) =>
  r.wall.map((_, i) =>
    procs.reduce((acc, p, k) => acc + (names.includes(p.name) ? r.cpu[k][i] : 0), 0),
  );

// kube-apiserver allows 100 concurrent streams per HTTP/2 connection: each set of 100
// watchers has a session of its own (`watchSessions`), requests go on `apiH2`.
async function watchScenario(ctx, annex, apiH2, watchSessions, procs) {
  const rounds = ctx.rounds;
  const events = ctx.quick ? 2 : 4;
  const podList = JSON.parse((await send(apiH2, { path: POD_PATH })).body);
  const cmList = JSON.parse((await send(apiH2, { path: `${CM_PATH}?limit=1` })).body);
  const podWatch = await watchers(
    watchSessions[0],
    `${POD_PATH}?watch=1&resourceVersion=${podList.metadata.resourceVersion}`,
    apiH2.headers,
    WATCHERS,
  );
  const cmWatch = await watchers(
    watchSessions[1],
    `${CM_PATH}?watch=1&resourceVersion=${cmList.metadata.resourceVersion}`,
    apiH2.headers,
    WATCHERS,
  );
  const acc = {
    annex: { wall: [], fanout: [], store: [], cpu: procs.map(() => []) },
    cm: { wall: [], cpu: procs.map(() => []) },
  };
  let tick = 0;
  const settle = () => new Promise((r) => setTimeout(r, 50));
  try {
    for (let round = 0; round < rounds; round++) {
      const a = { wall: [], fanout: [], store: [], cpu: procs.map(() => 0) };
      const c = { wall: [], cpu: procs.map(() => 0) };
      for (let i = 0; i < events; i++) {
        // annex: re-store the scrape with one pod changed; 100 watchers get one MODIFIED.
        await settle();
        tick++;
        const name = `pod-${String(tick % PODS).padStart(5, '0')}`;
        await annex.command(`tick ${tick}`);
        let c0 = procs.map((p) => cpuMs(p.pid));
        let t0 = performance.timeOrigin + performance.now();
        const seen = podWatch.next(`"name":"${name}"`);
        const stored = await annex.command('store');
        const lastAt = await seen;
        procs.forEach((p, k) => (a.cpu[k] += cpuMs(p.pid) - c0[k]));
        a.wall.push(lastAt - t0);
        a.fanout.push(lastAt - stored.storedAt);
        a.store.push(stored.storeMs);

        // kube-apiserver: one ConfigMap update; 100 watchers get one MODIFIED.
        await settle();
        const cm = `cm-${String(tick % PODS).padStart(5, '0')}`;
        c0 = procs.map((p) => cpuMs(p.pid));
        t0 = performance.timeOrigin + performance.now();
        const cmSeen = cmWatch.next(`"name":"${cm}"`);
        const r = await send(apiH2, {
          method: 'PATCH',
          path: `${CM_PATH}/${cm}`,
          headers: { 'content-type': 'application/merge-patch+json' },
          body: JSON.stringify({ data: { tick: String(tick) } }),
        });
        if (r.status !== 200) throw new Error(`patch configmap: ${r.status} ${r.body}`);
        const cmLast = await cmSeen;
        procs.forEach((p, k) => (c.cpu[k] += cpuMs(p.pid) - c0[k]));
        c.wall.push(cmLast - t0);
      }
      acc.annex.wall.push(median(a.wall));
      acc.annex.fanout.push(median(a.fanout));
      acc.annex.store.push(median(a.store));
      acc.cm.wall.push(median(c.wall));
      procs.forEach((_, k) => {
        acc.annex.cpu[k].push(a.cpu[k] / events);
        acc.cm.cpu[k].push(c.cpu[k] / events);
      });
    }
  } finally {
    podWatch.close();
    cmWatch.close();
  }
  const scenario = `watch fan-out to ${WATCHERS}`;
  const pod = `PodMetrics via kube-apiserver`;
  const cmName = 'ConfigMaps, kube-apiserver itself';
  const row = (subject, metric, unit, values) => ({
    group: GROUP,
    scenario,
    subject,
    metric,
    unit,
    values,
  });
  const rows = [
    row(pod, 'change → all watchers', 'ms', acc.annex.wall),
    row(pod, 'of which the store() of the scrape', 'ms', acc.annex.store),
    row(pod, 'store() done → all watchers', 'ms', acc.annex.fanout),
    row(cmName, 'PATCH sent → all watchers', 'ms', acc.cm.wall),
  ];
  procs.forEach((p, k) => {
    rows.push(row(pod, `${p.name} CPU`, 'ms/event', acc.annex.cpu[k]));
    rows.push(row(cmName, `${p.name} CPU`, 'ms/event', acc.cm.cpu[k]));
  });
  const ratios = [
    {
      group: GROUP,
      name: `watch fan-out to ${WATCHERS}: delivery after the change (wall)`,
      subject: `${pod} (store() done → all)`,
      reference: `${cmName} (PATCH sent → all)`,
      values: perRoundRatio(acc.annex.fanout, acc.cm.wall),
    },
  ];
  return { rows, ratios };
}

export async function run(ctx) {
  if (!existsSync(new URL('server/start.js', dist))) {
    throw new Error('bench/aggregated needs dist/: run `npm run build` first');
  }
  const { ensureBinaries, pinnedVersions } = await import(
    new URL('devcluster/binaries.js', dist).href
  );
  const { ControlPlane } = await import(new URL('devcluster/control-plane.js', dist).href);
  const wire = await import(new URL('devcluster/wire.js', dist).href);
  const bins = ensureBinaries();
  if ('missing' in bins) throw new Error(bins.missing);
  const cp = new ControlPlane(bins.binDir, pinnedVersions().kubernetes);
  const certsDir = mkdtempSync(join(tmpdir(), 'annex-bench-agg-'));
  let annex;
  const sessions = [];
  try {
    const c = await cp.start(ctx.log);
    const kubectl = async (args, input) =>
      execFileSync(c.kubectl, ['--kubeconfig', c.adminKubeconfig, ...args], {
        input,
        maxBuffer: 64 << 20,
      }).toString();
    annex = await startServer(c.adminKubeconfig, certsDir);
    const caBundle = readFileSync(join(certsDir, 'ca.crt'));
    await wire.ensureAnnexService(kubectl);
    const objs = wire.pointAtLocalAnnex(
      wire.repoManifest('apiservice/metrics-annex-dev/apiservice.yaml'),
      annex.port,
      caBundle.toString('base64'),
    );
    await wire.applyObjects(kubectl, objs);
    await kubectl([
      'wait',
      '--for=condition=Available',
      'apiservice/v1beta1.metrics.annex.dev',
      '--timeout=60s',
    ]);
    const pid = (f) => Number(readFileSync(join(c.dir, f), 'utf8'));
    const procs = [
      { name: 'annex', pid: annex.child.pid },
      { name: 'kube-apiserver', pid: pid('kube-apiserver.pid') },
      { name: 'etcd', pid: pid('etcd.pid') },
    ];

    const adminTls = {
      ca: readFileSync(c.servingCaFile),
      cert: readFileSync(join(c.dir, 'admin.crt')),
      key: readFileSync(join(c.dir, 'admin.key')),
    };
    const json = { accept: 'application/json' };
    const api = {
      base: c.server,
      tls: { ...adminTls, agent: new Agent({ keepAlive: true, maxSockets: 1 }) },
      headers: json,
    };
    await kubectl(['create', 'namespace', 'bench']);
    await createConfigMaps(
      { ...api, tls: { ...adminTls, agent: new Agent({ keepAlive: true, maxSockets: 16 }) } },
      ctx.log,
    );
    // Straight to annex as the aggregator calls it: front-proxy client certificate and the
    // identity headers (system:masters needs no SubjectAccessReview).
    const directTls = {
      ca: caBundle,
      servername: 'annex.annex-system.svc',
      cert: readFileSync(c.frontProxyClientCert),
      key: readFileSync(c.frontProxyClientKey),
    };
    const directHeaders = { ...json, 'x-remote-user': 'bench', 'x-remote-group': 'system:masters' };
    const annexBase = `https://127.0.0.1:${annex.port}`;
    const direct1 = {
      base: annexBase,
      tls: { ...directTls, agent: new Agent({ keepAlive: true, maxSockets: 1 }) },
      headers: directHeaders,
    };
    const direct2 = { session: h2session(annexBase, directTls), headers: directHeaders };
    const apiH2 = { session: h2session(c.server, adminTls), headers: json };
    const watchSessions = [h2session(c.server, adminTls), h2session(c.server, adminTls)];
    sessions.push(direct2.session, apiH2.session, ...watchSessions);

    const listPer = ctx.quick ? 3 : 6;
    const getPer = ctx.quick ? 20 : 60;
    const cmRef = 'ConfigMaps, kube-apiserver itself';
    const viaApi = 'PodMetrics via kube-apiserver';
    const items = (n) => (s, body) => {
      const got = JSON.parse(body);
      const count = (got.items ?? got.rows).length;
      if (count !== n) throw new Error(`${s.name}: ${count} items, expected ${n}`);
    };
    const rows = [];
    const ratios = [];
    const wallRatio = (name, results, i, ref, target) => ({
      group: GROUP,
      name,
      subject: results.subjects[i].name,
      reference: results.subjects[ref].name,
      values: perRoundRatio(results.out[i].wall, results.out[ref].wall),
      ...(target ? { target } : {}),
    });
    // ANNEX_BENCH_ONLY=list,watch (for profiling one scenario): the others are skipped.
    const only = process.env.ANNEX_BENCH_ONLY?.split(',');
    const wanted = (key) => !only || only.includes(key);
    const scenario = async (name, subjects, check, perRound) => {
      if (
        !wanted(
          name.split(' ')[0] === 'list' && name.endsWith('Table') ? 'table' : name.split(' ')[0],
        )
      )
        return undefined;
      ctx.log(`aggregated: ${name}`);
      const out = await compare(subjects, procs, ctx.rounds, perRound, check);
      rows.push(...rowsOf(name, subjects, procs, out));
      return { subjects, out };
    };

    const list = await scenario(
      `list ${PODS}`,
      [
        {
          name: 'PodMetrics direct (HTTP/1.1)',
          target: direct1,
          req: { path: POD_PATH },
          charge: ['annex'],
        },
        {
          name: 'PodMetrics direct (HTTP/2)',
          target: direct2,
          req: { path: POD_PATH },
          charge: ['annex'],
        },
        { name: viaApi, target: api, req: { path: POD_PATH }, charge: ['annex', 'kube-apiserver'] },
        { name: cmRef, target: api, req: { path: CM_PATH }, charge: ['kube-apiserver', 'etcd'] },
      ],
      items(PODS),
      listPer,
    );
    if (list)
      ratios.push(
        wallRatio(`list ${PODS}: via kube-apiserver / its own ConfigMap list (wall)`, list, 2, 3, {
          op: '<=',
          value: 0.5,
        }),
        wallRatio(
          `list ${PODS}: direct (HTTP/2) / kube-apiserver's ConfigMap list (wall)`,
          list,
          1,
          3,
        ),
        {
          group: GROUP,
          name: `list ${PODS}: CPU, annex + kube-apiserver / kube-apiserver + etcd`,
          subject: viaApi,
          reference: cmRef,
          values: perRoundRatio(
            sumCpu(list.out[2], procs, ['annex', 'kube-apiserver']),
            sumCpu(list.out[3], procs, ['kube-apiserver', 'etcd']),
          ),
        },
      );

    // Every pod changes at each scrape, so in a cluster most lists are the first after one:
    // nothing encoded before serves them.
    const afterScrape = await scenario(
      `list ${PODS} after a scrape`,
      [
        {
          name: viaApi,
          target: api,
          req: { path: POD_PATH },
          charge: ['annex', 'kube-apiserver'],
          before: async () => {
            await annex.command('scrape');
            await annex.command('store');
          },
        },
        { name: cmRef, target: api, req: { path: CM_PATH }, charge: ['kube-apiserver', 'etcd'] },
      ],
      items(PODS),
      listPer,
    );
    if (afterScrape)
      ratios.push(
        wallRatio(
          `list ${PODS} after a scrape: via kube-apiserver / ConfigMap list (wall)`,
          afterScrape,
          0,
          1,
        ),
      );

    const table = await scenario(
      `list ${PODS} as Table`,
      [
        {
          name: viaApi,
          target: api,
          req: { path: POD_PATH, headers: { accept: TABLE } },
          charge: ['annex', 'kube-apiserver'],
        },
        {
          name: cmRef,
          target: api,
          req: { path: CM_PATH, headers: { accept: TABLE } },
          charge: ['kube-apiserver', 'etcd'],
        },
      ],
      items(PODS),
      listPer,
    );
    if (table)
      ratios.push(
        wallRatio(`Table list ${PODS}: via kube-apiserver / ConfigMap Table (wall)`, table, 0, 1),
      );

    const get = await scenario(
      'get one',
      [
        {
          name: viaApi,
          target: api,
          req: { path: '/apis/metrics.annex.dev/v1beta1/namespaces/ns-7/pods/pod-00007' },
          charge: ['annex', 'kube-apiserver'],
        },
        {
          name: cmRef,
          target: api,
          req: { path: `${CM_PATH}/cm-00007` },
          charge: ['kube-apiserver', 'etcd'],
        },
      ],
      undefined,
      getPer,
    );
    if (get)
      ratios.push(wallRatio('get one: via kube-apiserver / ConfigMap get (wall)', get, 0, 1));

    if (wanted('watch')) {
      ctx.log(`aggregated: watch fan-out to ${WATCHERS}`);
      const w = await watchScenario(ctx, annex, apiH2, watchSessions, procs);
      rows.push(...w.rows);
      ratios.push(...w.ratios);
    }
    return {
      rows,
      ratios,
      notes: [
        `Kubernetes v${c.version}, Node ${process.version}; ${PODS} PodMetrics in 100 namespaces (2 containers each) against ${PODS} ConfigMaps of about the same JSON size; client ↔ kube-apiserver over HTTP/1.1 keep-alive (watches over HTTP/2), aggregator ↔ annex over HTTP/2.`,
        'Wall time is client-side, send to last byte; CPU is utime+stime of each process per request (/proc). Subjects and reference alternate request by request.',
        "List after a scrape: every pod changed, so every object is encoded anew (JSON.stringify of 10,000 objects is most of it); the other lists reuse each unchanged object's bytes.",
        'Watch: one change per event; annex\'s change is a re-stored 10,000-pod scrape with one pod changed (so the store() of the scrape is part of "change → all watchers"; the ratio uses "store() done → all watchers" against "PATCH sent → all watchers").',
      ],
    };
  } finally {
    for (const s of sessions) s.close();
    await annex?.stop();
    await cp.stop();
    rmSync(certsDir, { recursive: true, force: true });
  }
}

// Standalone: prints the medians of every row and ratio.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  const rounds = Number(args.find((a) => /^\d+$/.test(a)) ?? 3);
  const cacheDir = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'annex', 'bench');
  const result = await run({
    log: (m) => console.error(m),
    rounds,
    quick: args.includes('--quick'),
    cacheDir,
  });
  const f = (x) => (Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(2));
  for (const r of result.rows) {
    console.log(
      `${r.scenario} | ${r.subject} | ${r.metric}: ${f(median(r.values))} ${r.unit}  [${r.values.map(f).join(', ')}]`,
    );
  }
  for (const r of result.ratios) {
    const m = median(r.values);
    const t = r.target
      ? ` (target ${r.target.op} ${r.target.value}: ${(r.target.op === '<=' ? m <= r.target.value : m >= r.target.value) ? 'met' : 'NOT met'})`
      : '';
    console.log(
      `ratio ${r.name}: ${m.toFixed(2)}×${t}  [${r.values.map((v) => v.toFixed(2)).join(', ')}]`,
    );
  }
  for (const n of result.notes ?? []) console.log(`note: ${n}`);
}

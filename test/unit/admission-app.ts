// The real admission path for tests: createApp (src/server/app.ts) with the built-in
// webhooks from the real configuration (and, when asked, the policies of policies/ and
// CRD conversions), on a plain loopback HTTP server, every log line captured. TLS and
// connection handling are start.ts's business and are left out.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { loadConfig, type ConfigOverrides } from '../../src/config/load.js';
import type { Conversion } from '../../src/conversion/declare.js';
import { createLogger } from '../../src/log.js';
import { builtinFeatures } from '../../src/server/builtins.js';
import { WorkQueue } from '../../src/kube/workqueue.js';
import { appOf } from './app-of.js';

export interface AdmissionApp {
  base: string;
  /** Every log line written so far, as written (one JSON object each). */
  lines: string[];
  post(path: string, body: string | object): Promise<{ status: number; text: string; json: any }>;
  close(): Promise<void>;
}

export interface AdmissionAppOptions {
  /** Load the AdmissionPolicies of policies/, as annex does without an API server. */
  policies?: boolean;
  conversions?: Conversion[];
}

export async function startAdmissionApp(
  admissionOverrides: ConfigOverrides['admission'] = {},
  opts: AdmissionAppOptions = {},
): Promise<AdmissionApp> {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(line);
      done();
    },
  });
  const config = loadConfig({
    overrides: {
      admission: admissionOverrides,
      ...(opts.policies ? { policy: { enabled: true, native: false } } : {}),
    },
  });
  // debug: the access log line is checked too.
  const log = createLogger('debug', sink);
  const features = builtinFeatures(config);
  if (opts.policies)
    await features
      .find((f) => f.name === 'policy')
      ?.start?.({
        config: undefined,
        kube: null,
        log,
        queue: new WorkQueue(),
        registrationsChanged: () => {},
        events: { record: () => {} },
      });
  const app = appOf({
    log,
    webhooks: features.flatMap((f) => f.webhooks ?? []),
    conversions: opts.conversions ?? [],
    maxReviewBytesInFlight: config.admission.maxInFlightBytes,
  });
  const server: Server = createServer(app.callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    lines,
    async post(path, body) {
      const res = await fetch(base + path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await res.text();
      let json: any;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: res.status, text, json };
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** An AdmissionReview v1 around `object`, with `request` fields overridden. */
export function reviewOf(
  kind: { group: string; version: string; kind: string },
  object: unknown,
  request: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: '7c1a7a3e-0000-4000-8000-000000000001',
      kind,
      // The plural the webhooks' rules name (pods, deployments, cronjobs, widgets...).
      resource: {
        group: kind.group,
        version: kind.version,
        resource: `${kind.kind.toLowerCase()}s`,
      },
      namespace: 'ns',
      operation: 'CREATE',
      userInfo: { username: 'u' },
      object,
      dryRun: false,
      ...request,
    },
  };
}

// `annex certs generate | inspect | inject`: create the serving certificates, look at them,
// and put the CA into a live cluster's APIServices, webhook configurations and CRDs.
import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { ensureCertificates, type EnsureResult } from '../certs/ensure.js';
import { formatInspectReport, inspectCertificates } from '../certs/inspect.js';
import { InjectError, injectWithClient, type InjectOutcome } from '../certs/inject.js';
import { KubeClient } from '../kube/client.js';
import { isKubeError } from '../kube/errors.js';
import { defaultCredentials } from '../kube/kubeconfig.js';
import { assertDnsLabel, assertDnsName, assertIp } from '../certs/names.js';
import { UserError } from '../errors.js';

/** Where command output goes; tests pass collectors. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
}

const processIo: Io = {
  out: (t) => process.stdout.write(`${t}\n`),
  err: (t) => process.stderr.write(`${t}\n`),
};

export interface GenerateFlags {
  service: string;
  namespace: string;
  out: string;
  dns?: string[];
  ip?: string[];
  renewBefore?: number;
  caValidityDays?: number;
  validityDays?: number;
}

export interface InjectFlags {
  kubeconfig?: string;
  context?: string;
  /** Seconds to wait for the API server (connecting, each answer, an exec plugin). */
  timeout?: number;
  caFile: string;
  apiservice?: string[];
  mutating?: string[];
  validating?: string[];
  crd?: string[];
}

export function register(program: Command): void {
  const certs = program.command('certs').description('TLS certificates for the annex server');

  certs
    .command('generate')
    .description(
      'create or renew the CA and serving certificate; prints the base64 caBundle on stdout',
    )
    .requiredOption('--service <name>', 'Service name the API server dials')
    .requiredOption('--namespace <ns>', 'namespace of that Service')
    .option('--out <dir>', 'output folder', 'certs')
    .option('--dns <name...>', 'extra DNS SANs (default: localhost)')
    .option('--ip <address...>', 'IP SANs (default: 127.0.0.1)')
    .option(
      '--renew-before <days>',
      'renew certificates expiring within this many days',
      days('--renew-before'),
      30,
    )
    .option(
      '--ca-validity-days <days>',
      'CA lifetime for a new CA',
      days('--ca-validity-days', 1),
      3650,
    )
    .option(
      '--validity-days <days>',
      'serving certificate lifetime',
      days('--validity-days', 1),
      365,
    )
    .action(async (o: GenerateFlags) => {
      await certsGenerate(o, processIo);
    });

  certs
    .command('inspect')
    .description('show ca.crt and tls.crt and check the chain (exit 1 if it does not verify)')
    .argument('[dir]', 'certificate folder', 'certs')
    .action((dir: string) => certsInspect(dir, processIo));

  certs
    .command('inject')
    .description(
      'write the caBundle into APIServices, webhook configurations and CRD conversion webhooks, as field manager annex',
    )
    .option('--kubeconfig <file>', 'kubeconfig of the target cluster (default: as kubectl)')
    .option('--context <name>', 'kubeconfig context to use (default: its current-context)')
    .option(
      '--timeout <seconds>',
      'give up on a silent API server after this many seconds',
      seconds('--timeout'),
      10,
    )
    .option('--ca-file <file>', 'CA certificate to inject', 'certs/ca.crt')
    .option('--apiservice <name...>', 'APIService names')
    .option('--mutating <name...>', 'MutatingWebhookConfiguration names')
    .option('--validating <name...>', 'ValidatingWebhookConfiguration names')
    .option('--crd <name...>', 'CustomResourceDefinition names (conversion webhook)')
    .action(async (o: InjectFlags) => {
      await certsInject(o, processIo);
    });
}

export async function certsGenerate(o: GenerateFlags, io: Io): Promise<EnsureResult> {
  assertDnsLabel(o.service, '--service');
  assertDnsLabel(o.namespace, '--namespace');
  for (const d of o.dns ?? []) assertDnsName(d, '--dns');
  for (const ip of o.ip ?? []) assertIp(ip, '--ip');
  const r = await ensureCertificates({
    dir: o.out,
    service: o.service,
    namespace: o.namespace,
    dnsNames: o.dns,
    ipAddresses: o.ip,
    renewBeforeDays: o.renewBefore,
    caValidityDays: o.caValidityDays,
    leafValidityDays: o.validityDays,
  });
  const until = (d: Date) => `expires ${d.toISOString()}`;
  io.err(
    r.issuedCa
      ? `issued CA "${r.ca.subject}" (${r.caReason}), ${until(r.ca.notAfter)}`
      : `reused CA "${r.ca.subject}", ${until(r.ca.notAfter)}`,
  );
  const svc = `${o.service}.${o.namespace}.svc`;
  io.err(
    r.issuedLeaf
      ? `issued serving certificate for ${svc} (${r.leafReason}), ${until(r.leaf.notAfter)}`
      : `reused serving certificate for ${svc}, ${until(r.leaf.notAfter)}`,
  );
  io.err(`SANs: ${[...r.leaf.dnsNames, ...r.leaf.ipAddresses].join(', ')}; files in ${o.out}/`);
  io.out(r.caBundle);
  return r;
}

export function certsInspect(dir: string, io: Io): void {
  const report = inspectCertificates(dir);
  io.out(formatInspectReport(report));
  if (report.problems.length > 0) {
    const n = report.problems.length;
    throw new UserError(
      `certificates in ${dir} do not verify (${n} problem${n > 1 ? 's' : ''} above)`,
    );
  }
}

export async function certsInject(o: InjectFlags, io: Io): Promise<InjectOutcome[]> {
  if (!o.apiservice?.length && !o.mutating?.length && !o.validating?.length && !o.crd?.length) {
    throw new UserError('nothing to inject: pass --apiservice, --mutating, --validating or --crd');
  }
  let pem: string;
  try {
    pem = readFileSync(o.caFile, 'utf8');
    new X509Certificate(pem);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new UserError(
      `--ca-file ${o.caFile}: ${code === 'ENOENT' ? 'file not found' : 'not a PEM certificate'}`,
    );
  }
  // Checked here so the message names the flag rather than a parser's internals.
  if (o.kubeconfig && !existsSync(o.kubeconfig))
    throw new UserError(`--kubeconfig ${o.kubeconfig}: file not found`);
  let results: InjectOutcome[];
  try {
    const creds = defaultCredentials({ kubeconfig: o.kubeconfig, context: o.context });
    const kube = new KubeClient(creds, { timeoutMs: (o.timeout ?? 10) * 1000 });
    try {
      results = await injectWithClient(kube, Buffer.from(pem).toString('base64'), {
        apiServices: o.apiservice ?? [],
        mutatingWebhooks: o.mutating ?? [],
        validatingWebhooks: o.validating ?? [],
        crds: o.crd ?? [],
      });
    } finally {
      kube.close();
    }
  } catch (e) {
    if (isKubeError(e) || e instanceof InjectError) throw new UserError(e.message);
    throw e;
  }
  for (const r of results) {
    const where = r.webhooks === undefined ? '' : ` (${r.webhooks} webhooks)`;
    io.err(`${r.changed ? 'patched' : 'unchanged'} ${r.kind} ${r.name}${where}`);
  }
  return results;
}

function seconds(flag: string): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (!(n > 0) || !Number.isFinite(n))
      throw new UserError(`${flag} must be a number of seconds > 0, got "${v}"`);
    return n;
  };
}

export function days(flag: string, min = 0): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) {
      throw new UserError(`${flag} must be a whole number of days ≥ ${min}, got "${v}"`);
    }
    return n;
  };
}

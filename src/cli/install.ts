// `annex install` / `annex uninstall`: the kustomize base in manifests/ applied (or
// removed) as the operator, with the kubeconfig kubectl would use.
import { InvalidArgumentError, type Command } from 'commander';
import { KubeClient } from '../kube/client.js';
import { defaultCredentials } from '../kube/kubeconfig.js';
import { applyBundle, uninstall, waitForRegistration } from '../install/apply.js';
import { checkNamespace, DEFAULT_NAMESPACE, renderBundle } from '../install/bundle.js';
import { UserError } from '../errors.js';

interface Flags {
  kubeconfig?: string;
  context?: string;
  namespace: string;
  image?: string;
  /** Seconds to wait for annex to register itself (install) or namespaces to go (uninstall). */
  wait: number;
}

const say = (line: string) => process.stdout.write(`${line}\n`);

function client(o: Flags): KubeClient {
  const creds = defaultCredentials({
    ...(o.kubeconfig ? { kubeconfig: o.kubeconfig } : {}),
    ...(o.context ? { context: o.context } : {}),
  });
  return new KubeClient(creds);
}

function seconds(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0)
    throw new InvalidArgumentError('must be a number of seconds >= 0.');
  return n;
}

const common = (c: Command) =>
  c
    .option('--kubeconfig <file>', 'kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)')
    .option('--context <name>', 'kubeconfig context to use (default: its current-context)')
    .option('-n, --namespace <ns>', "annex's namespace", DEFAULT_NAMESPACE);

export function register(program: Command): void {
  common(program.command('install'))
    .description(
      'apply manifests/ (Deployment, RBAC, …) and wait until annex, once ready, has registered its APIServices and webhooks',
    )
    .option('--image <ref>', 'the annex container image (default: the one in manifests/)')
    .option(
      '--wait <seconds>',
      'how long to wait for the registration (0: do not wait)',
      seconds,
      180,
    )
    .action(async (o: Flags) => {
      const bundle = renderBundle({
        namespace: checkNamespace(o.namespace),
        ...(o.image ? { image: o.image } : {}),
      });
      const kube = client(o);
      try {
        await applyBundle(kube, bundle, say);
        if (o.wait === 0) return;
        if (!(await waitForRegistration(kube, o.wait * 1000, say)))
          throw new UserError(
            `annex did not register itself within ${o.wait} s: see \`kubectl -n ${o.namespace} get pods\` and the pods' logs`,
          );
      } finally {
        kube.close();
      }
    });

  common(program.command('uninstall'))
    .description('remove the APIServices and webhooks first, then everything else annex installed')
    .option('--wait <seconds>', 'how long to wait for each step to finish', seconds, 30)
    .action(async (o: Flags) => {
      const bundle = renderBundle({ namespace: checkNamespace(o.namespace) });
      const kube = client(o);
      try {
        const left = await uninstall(kube, bundle, say, o.wait * 1000);
        for (const ns of left)
          say(
            `namespace/${ns} is still terminating (its finalizers belong to the namespace controller)`,
          );
      } finally {
        kube.close();
      }
    });
}

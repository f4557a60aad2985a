// `annex demo`: a real kube-apiserver + etcd + kube-controller-manager on loopback with
// annex plugged in — the APIServices and webhooks of its features registered — for trying
// every scene of docs/tour.md. Works from a checkout and from an installed annex alike: the
// control plane's recipe (devcluster/) ships in the package.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Command } from 'commander';
import { loadConfig, type ConfigOverrides } from '../config/load.js';
import { ensureBinaries, pinnedVersions } from '../devcluster/binaries.js';
import { ControlPlane } from '../devcluster/control-plane.js';
import {
  applyObjects,
  ensureAnnexService,
  pointAtLocalAnnex,
  type Kubectl,
} from '../devcluster/wire.js';
import { UserError } from '../errors.js';
import { declarationsOf, renderObjects, serviceRefOf } from '../manifests/render.js';
import { waitForCondition } from '../devcluster/wait.js';
import { policyCrd } from '../policy/crd.js';
import { exceptionCrd } from '../policy/exceptions/crd.js';
import { createLogger } from '../log.js';
import { builtinFeatures } from '../server/builtins.js';
import { validateFeatures } from '../core/feature.js';
import { loadFeatureModules } from '../server/load-features.js';
import { startAnnex } from '../server/start.js';

/**
 * What a cluster does without being asked: deleting namespaces, ServiceAccounts and their
 * tokens, garbage collection, Deployments → ReplicaSets → Pods. Every controller on by
 * default; no scheduler and no kubelet run, so Pods are admitted but stay Pending.
 */
const CONTROLLERS = ['*'];

export function register(program: Command): void {
  program
    .command('demo')
    .description(
      'start a local kube-apiserver + etcd with annex registered in it (Ctrl-C stops all)',
    )
    .option('--log-level <level>', 'annex log level', 'warn')
    .option('--load <module...>', "modules of the user's own features, registered too")
    .option('--policies', 'serve AdmissionPolicies too (the CRD is applied first)')
    .action(async (o: { logLevel: string; load?: string[]; policies?: boolean }) => {
      const settings: ConfigOverrides = {
        metrics: { registerMetricsK8sIo: true, scrapeIntervalSeconds: 5 },
        log: { level: o.logLevel as 'warn' },
        ...(o.policies ? { policy: { enabled: true } } : {}),
      };
      // The user's modules before any process starts: one that does not load, or that
      // collides with a built-in, is one line now rather than after the control plane.
      const mine = await loadFeatureModules(o.load ?? []);
      validateFeatures([...builtinFeatures(loadConfig({ overrides: settings })), ...mine]);
      const bins = ensureBinaries();
      if ('missing' in bins) throw new UserError(`annex demo: ${bins.missing}`);
      const cp = new ControlPlane(bins.binDir, pinnedVersions().kubernetes);
      const info = await cp.start((l) => console.error(`annex demo: ${l}`), {
        controllerManager: {
          controllers: CONTROLLERS,
          // With the admin's credentials rather than a ServiceAccount token per controller:
          // ~40 TokenRequests made starting take 5 s on 2 busy cores, and nothing but this
          // machine's user reaches this control plane.
          args: ['--use-service-account-credentials=false'],
        },
      });
      const kubectl: Kubectl = async (args, input) => {
        const run = promisify(execFile);
        const p = run(info.kubectl, ['--kubeconfig', info.adminKubeconfig, ...args]);
        if (input !== undefined) p.child.stdin!.end(input);
        return (await p).stdout;
      };
      const config = loadConfig({
        overrides: {
          ...settings,
          server: { host: '127.0.0.1', port: 0 },
          tls: { dir: join(info.dir, 'annex-certs') },
          kube: { kubeconfig: info.adminKubeconfig },
          // The demo's API server presents this CA's client certificate to every webhook.
          admission: { clientCA: info.webhookClientCaFile },
        },
      });
      // The policy feature lists AdmissionPolicies and PolicyExceptions as it starts: their CRDs come first.
      if (o.policies) await applyObjects(kubectl, [policyCrd(), exceptionCrd()]);
      const annex = await startAnnex(config, createLogger(config.log.level), mine);
      const stop = async () => {
        await annex.close();
        await cp.stop();
        process.exit(0);
      };
      process.once('SIGINT', () => void stop());
      process.once('SIGTERM', () => void stop());

      await ensureAnnexService(kubectl);
      const caBundle = readFileSync(join(config.tls.dir, 'ca.crt')).toString('base64');
      // What `annex manifests` renders for the features this annex runs.
      const objs = renderObjects(declarationsOf(annex.features), serviceRefOf(config));
      await applyObjects(kubectl, pointAtLocalAnnex(objs, annex.port, caBundle));
      await waitForCondition(
        kubectl,
        ['apiservice', '-l', 'app.kubernetes.io/name=annex'],
        'Available',
      );
      // kube-controller-manager's ServiceAccount controller at work: `kubectl run` can now.
      await kubectl([
        'wait',
        '--for=create',
        'serviceaccount/default',
        '-n',
        'default',
        '--timeout=60s',
      ]);

      console.log(`annex demo is ready: kube-apiserver v${info.version} at ${info.server} with kube-controller-manager, annex at ${annex.url}.
There is no scheduler and no node: Pods are admitted (annex's webhooks see them) but stay Pending.
In another shell:

  export KUBECONFIG=${info.adminKubeconfig}
  alias kubectl=${info.kubectl}    # the matching v${info.version} kubectl

  kubectl get apiservices -l app.kubernetes.io/name=annex
  kubectl get nodemetrics
  kubectl top node
  kubectl create deployment web.front --image=nginx:1.27
  kubectl run nu --image=nginx:1.27 --dry-run=server -o yaml

Ctrl-C stops annex and the control plane, and deletes their files.`);
    });
}

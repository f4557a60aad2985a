// docs/tour.md's metrics scene: two test kubelets (test/cluster/kubelet.ts, real HTTPS
// servers reporting fixed usage) stand in for the nodes `npm run demo` lacks, with the pods
// the page shows in namespaces of the scene's own, which the page shows as shop and
// monitoring.
import type { ConfigOverrides } from '../../src/config/load.js';
import type { Config } from '../../src/config/load.js';
import { createNamespace, kubectl } from '../cluster/harness.js';
import { startFakeMetricsCluster, type FakeNode } from '../cluster/kubelet.js';
import type { SceneContext } from './scenes.js';

const Mi = 1024 * 1024;
/** Short, so that the first window comes soon; the page's 15s is an age to the comparison. */
const INTERVAL_S = 2;

const c = (name: string, cpu: number, memoryMi: number) => ({ name, cpu, memory: memoryMi * Mi });

function nodes(shop: string, monitoring: string): FakeNode[] {
  const allocatable = { cpu: '4', memory: '16Gi' };
  return [
    {
      name: 'worker-1',
      usage: { cpu: 1.375, memory: 5632 * Mi },
      allocatable,
      pods: [
        { namespace: shop, name: 'cart-5d8f7c9b6-lm4nv', containers: [c('cart', 0.375, 180)] },
        { namespace: shop, name: 'postgres-0', containers: [c('postgres', 0.25, 412)] },
        {
          namespace: shop,
          name: 'web-7c9d6b5f4-2xkqp',
          containers: [c('nginx', 0.125, 48), c('log-shipper', 0.125, 24)],
        },
      ],
    },
    {
      name: 'worker-2',
      usage: { cpu: 0.625, memory: 3584 * Mi },
      allocatable,
      pods: [
        { namespace: monitoring, name: 'prometheus-0', containers: [c('prometheus', 0.125, 640)] },
        {
          namespace: shop,
          name: 'web-7c9d6b5f4-9wzrt',
          containers: [c('nginx', 0.25, 52), c('log-shipper', 0.125, 24)],
        },
      ],
    },
  ];
}

/** Starts the kubelets, Nodes and Pods; returns annex's metrics settings to scrape them. */
export async function startKubelets(ctx: SceneContext): Promise<ConfigOverrides> {
  const shop = await createNamespace('shop');
  const monitoring = await createNamespace('monitoring');
  ctx.cleanups.push(async () => {
    for (const ns of [shop, monitoring]) await kubectl(['delete', 'namespace', ns, '--wait=false']);
  });
  const fake = await startFakeMetricsCluster(nodes(shop, monitoring), INTERVAL_S * 1000);
  ctx.cleanups.push(() => fake.stop());
  ctx.shown.push([new RegExp(`\\b${shop}\\b`, 'g'), 'shop']);
  ctx.shown.push([new RegExp(`\\b${monitoring}\\b`, 'g'), 'monitoring']);
  ctx.typed.push([/(?<=-n )shop\b/g, shop]);
  return {
    metrics: {
      source: 'kubelet',
      registerMetricsK8sIo: true,
      scrapeIntervalSeconds: INTERVAL_S,
      kubelet: { caFile: fake.caFile, timeoutSeconds: 1.5 } as Config['metrics']['kubelet'],
    },
  } as ConfigOverrides;
}

import { describe, it, expect } from 'vitest';
import { startMetrics } from './index.js';

describe('startMetrics', () => {
  it('local source: ready with one node and one pod about a second after start', async () => {
    const m = startMetrics({ source: 'local', intervalSeconds: 60 });
    expect(m.ready()).toBe(false);
    await new Promise((r) => setTimeout(r, 1200));
    await m.stop();
    expect(m.ready()).toBe(true);
    expect(m.live()).toBe(true);
    expect((await m.store.nodes.snapshot()).items).toHaveLength(1);
    expect((await m.store.pods.snapshot()).items).toHaveLength(1);
  });

  it('kubelet source: live after its first tick even with no nodes', async () => {
    const m = startMetrics({
      source: 'kubelet',
      intervalSeconds: 15,
      kubelet: { listNodes: async () => [], stagger: false },
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(m.live()).toBe(true);
    expect(m.ready()).toBe(false);
    await m.stop();
  });
});

import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from './control-plane.js';

describe('freePort', () => {
  const range = '/proc/sys/net/ipv4/ip_local_port_range';
  it.skipIf(!existsSync(range))(
    'gives distinct ports outside the ephemeral range that a server can listen on',
    async () => {
      const [low, high] = readFileSync(range, 'utf8').trim().split(/\s+/).map(Number) as [
        number,
        number,
      ];
      const ports: number[] = [];
      for (let i = 0; i < 20; i++) ports.push(await freePort());
      expect(new Set(ports).size).toBe(20);
      for (const p of ports) expect(p >= low && p <= high).toBe(false);
      const s = createServer();
      await new Promise<void>((r) => s.listen(ports[0], '127.0.0.1', r));
      await new Promise((r) => s.close(r));
    },
  );
});

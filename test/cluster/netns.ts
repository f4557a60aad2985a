// A network trap, for tests that must prove annex sends no packet to an address: two
// network namespaces the test creates, joined by a veth pair. One holds annex (192.0.2.2,
// default route into the other); the other plays the cloud's metadata host (192.0.2.1 and
// 169.254.169.254 on its end of the pair), with listeners that log every connection.
// Nothing routes beyond the pair, so whatever annex does, no packet leaves the machine; an
// iptables counter in annex's namespace and the listeners' logs say what it sent. The API
// server (the host's loopback) is reached through a Unix socket, which no network namespace
// confines. (A veth end carries the address: this kernel has no `dummy` link type.)
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export const ANNEX_ADDRESS = '192.0.2.2';
export const PEER_ADDRESS = '192.0.2.1';
export const METADATA_ADDRESS = '169.254.169.254';
/** On the peer: answers 302 to the metadata address. */
export const REDIRECT_URL = `http://${PEER_ADDRESS}:8080/metrics`;

/** Why the trap cannot be built here, or undefined when it can. */
export function trapUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (ip netns, iptables)';
  for (const tool of ['ip', 'iptables']) {
    if (spawnSync(tool, ['-V']).status !== 0) return `needs ${tool}`;
  }
  return undefined;
}

function run(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr || r.error?.message}`);
  return r.stdout;
}

/** The child's stdout, line by line, to every listener. */
function lines(child: ChildProcess): (onLine: (line: string) => void) => void {
  const rl = createInterface({ input: child.stdout! });
  return (onLine) => rl.on('line', onLine);
}

/** Waits for a line matching `re`; rejects if the child exits first. */
function lineFrom(
  child: ChildProcess,
  on: (f: (l: string) => void) => void,
  re: RegExp,
  what: string,
): Promise<string> {
  return new Promise((resolve, reject) => {
    on((l) => re.test(l) && resolve(l));
    child.once('exit', (code) => reject(new Error(`${what} exited (${code}) before "${re}"`)));
  });
}

// The peer's listeners: one line per connection on stdout.
const PEER_SCRIPT = `
const http = require('node:http');
const listen = (host, port, name, handler) =>
  http.createServer((q, s) => handler(s)).on('connection', () => console.log('connection ' + name))
    .listen(port, host, () => console.log('listening ' + name));
listen('${METADATA_ADDRESS}', 80, 'metadata', (s) => s.end('{"v": 42}'));
listen('${PEER_ADDRESS}', 8080, 'redirect', (s) => {
  s.writeHead(302, { location: 'http://${METADATA_ADDRESS}/latest/meta-data' });
  s.end();
});
`;

// Inside annex's namespace: 127.0.0.1:<port> forwarded to a Unix socket.
const FORWARD_SCRIPT = (socket: string) => `
const net = require('node:net');
const server = net.createServer((c) => {
  const u = net.connect('${socket}');
  c.pipe(u).pipe(c);
  c.on('error', () => u.destroy());
  u.on('error', () => c.destroy());
});
server.listen(0, '127.0.0.1', () => console.log('port ' + server.address().port));
`;

export interface Trap {
  /** annex's namespace. */
  readonly ns: string;
  /** Starts `cmd` inside annex's namespace. */
  spawnInside(cmd: string, args: string[]): ChildProcess;
  /** A port on annex's 127.0.0.1 that reaches the host's 127.0.0.1:`hostPort`. */
  forward(hostPort: number): Promise<number>;
  /** Packets annex's namespace has sent to 169.254.0.0/16 (iptables counter). */
  linkLocalPackets(): number;
  /** Connections the peer's listeners accepted, by name (metadata, redirect). */
  readonly connections: Record<string, number>;
  close(): Promise<void>;
}

/**
 * Builds the trap. `hosts` becomes annex's /etc/hosts inside its namespace (`ip netns exec`
 * mounts /etc/netns/<ns>/ over /etc/), and its DNS server is the peer, which has none.
 */
export async function createTrap(hosts: Record<string, string>): Promise<Trap> {
  const id = randomBytes(3).toString('hex');
  const [ns, peer] = [`annex-trap-${id}`, `annex-peer-${id}`];
  const etc = `/etc/netns/${ns}`;
  const dir = mkdtempSync(join(tmpdir(), 'annex-trap-'));
  const children: ChildProcess[] = [];
  const servers: Server[] = [];
  const connections: Record<string, number> = {};
  const close = async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    for (const s of servers) s.close();
    for (const n of [ns, peer]) spawnSync('ip', ['netns', 'del', n]);
    rmSync(etc, { recursive: true, force: true });
    try {
      rmdirSync('/etc/netns'); // only if no other namespace keeps files there
    } catch {
      // not empty, or gone
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    run('ip', ['netns', 'add', ns]);
    run('ip', ['netns', 'add', peer]);
    run('ip', [
      '-n',
      ns,
      'link',
      'add',
      'veth0',
      'type',
      'veth',
      'peer',
      'name',
      'veth0',
      'netns',
      peer,
    ]);
    run('ip', ['-n', ns, 'addr', 'add', `${ANNEX_ADDRESS}/24`, 'dev', 'veth0']);
    run('ip', ['-n', peer, 'addr', 'add', `${PEER_ADDRESS}/24`, 'dev', 'veth0']);
    run('ip', ['-n', peer, 'addr', 'add', `${METADATA_ADDRESS}/32`, 'dev', 'veth0']);
    for (const n of [ns, peer]) {
      run('ip', ['-n', n, 'link', 'set', 'lo', 'up']);
      run('ip', ['-n', n, 'link', 'set', 'veth0', 'up']);
    }
    run('ip', ['-n', ns, 'route', 'add', 'default', 'via', PEER_ADDRESS]);
    run('ip', [
      'netns',
      'exec',
      ns,
      'iptables',
      '-w',
      '-A',
      'OUTPUT',
      '-d',
      '169.254.0.0/16',
      '-j',
      'ACCEPT',
    ]);
    mkdirSync(etc, { recursive: true });
    const entries = Object.entries({ localhost: '127.0.0.1', ...hosts });
    writeFileSync(join(etc, 'hosts'), entries.map(([h, a]) => `${a} ${h}\n`).join(''));
    writeFileSync(join(etc, 'resolv.conf'), `nameserver ${PEER_ADDRESS}\n`);

    const peerProc = spawn('ip', ['netns', 'exec', peer, process.execPath, '-e', PEER_SCRIPT], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(peerProc);
    const onLine = lines(peerProc);
    onLine((l) => {
      const m = /^connection (\w+)$/.exec(l);
      if (m) connections[m[1]!] = (connections[m[1]!] ?? 0) + 1;
    });
    await Promise.all([
      lineFrom(peerProc, onLine, /^listening metadata$/, 'the metadata listener'),
      lineFrom(peerProc, onLine, /^listening redirect$/, 'the redirect listener'),
    ]);
  } catch (e) {
    await close();
    throw e;
  }

  const spawnInside = (cmd: string, args: string[]) => {
    const child = spawn('ip', ['netns', 'exec', ns, cmd, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    return child;
  };

  return {
    ns,
    connections,
    spawnInside,
    async forward(hostPort) {
      const socket = join(dir, `forward-${hostPort}.sock`);
      const server = createServer((c) => {
        const t = connect(hostPort, '127.0.0.1');
        c.pipe(t).pipe(c);
        c.on('error', () => t.destroy());
        t.on('error', () => c.destroy());
      });
      await new Promise<void>((r) => server.listen(socket, r));
      servers.push(server);
      const child = spawnInside(process.execPath, ['-e', FORWARD_SCRIPT(socket)]);
      const line = await lineFrom(child, lines(child), /^port \d+$/, 'the forwarder');
      return Number(line.split(' ')[1]);
    },
    linkLocalPackets() {
      const out = run('ip', [
        'netns',
        'exec',
        ns,
        'iptables',
        '-w',
        '-L',
        'OUTPUT',
        '-v',
        '-x',
        '-n',
      ]);
      const rule = out.split('\n').find((l) => l.includes('169.254.0.0/16'));
      if (!rule) throw new Error(`no counter in annex's namespace:\n${out}`);
      return Number(rule.trim().split(/\s+/)[0]);
    },
    close,
  };
}

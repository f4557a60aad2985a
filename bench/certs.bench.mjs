// Certificate generation cost: CA + serving leaf, as ensureCertificates makes them (native
// OpenSSL keygen, both keys in parallel, native signing), against node-forge's pure-JS
// keygen + signing (what Pepr-style generators do) as the reference in the same run.
//
//   npm run build && node bench/certs.bench.mjs [runs=20] [forgeRuns=5]
//
// ANNEX_DIST points at another build folder (default ../dist next to this file).
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import forge from 'node-forge';

const dist = process.env.ANNEX_DIST
  ? pathToFileURL(`${resolve(process.env.ANNEX_DIST)}/`)
  : new URL('../dist/', import.meta.url);
const { createCa, issue, generateRsaKey, serviceDnsNames } = await import(
  new URL('certs/index.js', dist).href
);

const runs = Number(process.argv[2] ?? 20);
const forgeRuns = Number(process.argv[3] ?? 5);
const dnsNames = [...serviceDnsNames('annex', 'annex-system'), 'localhost'];

async function nativeOnce() {
  const [caKey, leafKey] = await Promise.all([generateRsaKey(), generateRsaKey()]);
  const ca = await createCa({ key: caKey });
  await issue({
    ca,
    key: leafKey,
    commonName: 'annex.annex-system.svc',
    usages: ['serverAuth'],
    dnsNames,
    ipAddresses: ['127.0.0.1'],
  });
}

// Pure JS end to end: forge would otherwise hand keygen to node:crypto itself.
function forgeOnce() {
  forge.options.usePureJavaScript = true;
  const { pki, md } = forge;
  const make = (keys, subject, issuer, signer, exts) => {
    const cert = pki.createCertificate();
    cert.publicKey = keys.publicKey;
    cert.serialNumber = '4a' + forge.util.bytesToHex(forge.random.getBytesSync(15));
    cert.validity.notBefore = new Date(Date.now() - 3_600_000);
    cert.validity.notAfter = new Date(Date.now() + 365 * 86_400_000);
    cert.setSubject(subject);
    cert.setIssuer(issuer);
    cert.setExtensions(exts);
    cert.sign(signer, md.sha256.create());
    return cert;
  };
  const caKeys = pki.rsa.generateKeyPair({ bits: 2048 });
  const caName = [{ name: 'commonName', value: 'annex-ca@0' }];
  make(caKeys, caName, caName, caKeys.privateKey, [
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  const leafKeys = pki.rsa.generateKeyPair({ bits: 2048 });
  make(
    leafKeys,
    [{ name: 'commonName', value: 'annex.annex-system.svc' }],
    caName,
    caKeys.privateKey,
    [
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: dnsNames.map((value) => ({ type: 2, value })) },
    ],
  );
  forge.options.usePureJavaScript = false;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

// Wall time, plus process CPU time (all threads, so the libuv keygen work counts): on a
// busy machine the CPU figure is the steadier one.
async function measure(n, fn) {
  const wall = [];
  const cpu = [];
  for (let i = 0; i < n; i++) {
    const c = process.cpuUsage();
    const t = performance.now();
    await fn();
    wall.push(performance.now() - t);
    const d = process.cpuUsage(c);
    cpu.push((d.user + d.system) / 1000);
  }
  return { median: median(wall), min: Math.min(...wall), max: Math.max(...wall), cpu: median(cpu) };
}

await nativeOnce(); // warm-up: module loading and OpenSSL initialisation
const native = await measure(runs, nativeOnce);
const pure = await measure(forgeRuns, forgeOnce);
const fmt = (r) =>
  `median ${r.median.toFixed(1)} ms wall (min ${r.min.toFixed(1)}, max ${r.max.toFixed(1)}), ` +
  `median ${r.cpu.toFixed(1)} ms CPU`;
console.log(`CA + leaf, RSA-2048, native keygen + native signing, ${runs} runs: ${fmt(native)}`);
console.log(`CA + leaf, RSA-2048, node-forge pure JS (reference), ${forgeRuns} runs: ${fmt(pure)}`);
console.log(
  `ratio forge / native (medians): ${(pure.median / native.median).toFixed(1)}x wall, ` +
    `${(pure.cpu / native.cpu).toFixed(1)}x CPU`,
);
console.log(
  `load average at the end: ${(await import('node:os'))
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
console.log(`budget 200 ms: ${native.median <= 200 ? 'met' : 'NOT met'}`);

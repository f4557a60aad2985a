// Fuzz: the loaders of what a user hands annex: a kubeconfig (YAML text mutated, or its
// document mutated and written again) and the serving certificate, key and CA (PEM text
// mutated, or the files swapped). Each returns credentials or material, or throws its
// own error (KubeconfigError, CertificateFileError) that the CLI prints as one line;
// nothing else. No file is read: the kubeconfig's file reader is a stub.
import { generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { CertificateFileError, checkServingFiles } from '../../../src/certs/load.js';
import { createCa, issue } from '../../../src/certs/issue.js';
import { KubeconfigError, parseKubeconfig } from '../../../src/kube/kubeconfig.js';
import {
  expandDeep,
  expectUnpolluted,
  guard,
  mutate,
  mutation,
  options,
  returnsOrRefuses,
  runsOf,
  SEED,
  textInputs,
  timeoutFor,
} from './fuzz.js';

const RUNS = runsOf(3_000);
const b64 = (s: string) => Buffer.from(s).toString('base64');

const KUBECONFIG = {
  apiVersion: 'v1',
  kind: 'Config',
  'current-context': 'dev',
  contexts: [
    { name: 'dev', context: { cluster: 'c1', user: 'u1', namespace: 'ns' } },
    { name: 'exec', context: { cluster: 'c2', user: 'u2' } },
    { name: 'files', context: { cluster: 'c2', user: 'u3' } },
  ],
  clusters: [
    {
      name: 'c1',
      cluster: {
        server: 'https://127.0.0.1:6443/',
        'certificate-authority-data': b64('-----BEGIN CERTIFICATE-----\nMII\n'),
        'tls-server-name': 'kubernetes',
      },
    },
    {
      name: 'c2',
      cluster: {
        server: 'https://[::1]:6443',
        'certificate-authority': 'ca.crt',
        'insecure-skip-tls-verify': false,
        extensions: [{ name: 'client.authentication.k8s.io/exec', extension: { a: 1 } }],
      },
    },
  ],
  users: [
    { name: 'u1', user: { token: 'token-1' } },
    {
      name: 'u2',
      user: {
        exec: {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: './plugin',
          args: ['--x'],
          env: [{ name: 'A', value: 'b' }],
          interactiveMode: 'Never',
          provideClusterInfo: true,
        },
      },
    },
    { name: 'u3', user: { 'client-certificate': 'c.crt', 'client-key': 'c.key', tokenFile: 't' } },
  ],
};
const KUBECONFIG_TEXT = stringify(KUBECONFIG);
const YAML_FRAGMENTS = [
  ': ',
  '- ',
  '\n  ',
  '&a ',
  '*a',
  '<<: *a',
  '!!binary ',
  '!!js/function ',
  '? ',
  '|',
  '>-',
  '---\n',
  '...\n',
  '%YAML 1.1\n',
  '{',
  '[',
  'null',
  '~',
  'current-context',
  'contexts',
  'users',
  'server',
  'exec',
];

/** Files the kubeconfig names: some read, some missing, none from the disk. */
function readFile(path: string): Buffer {
  if (path.endsWith('.crt') || path.endsWith('.key')) return Buffer.from('pem');
  throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
}

const kubeconfigInputs = fc.oneof(
  textInputs([KUBECONFIG_TEXT], YAML_FRAGMENTS),
  fc
    .tuple(
      fc.array(mutation, { minLength: 1, maxLength: 4 }),
      fc.constantFrom('dev', 'exec', 'files'),
    )
    .map(([ms, context]) => {
      const doc = structuredClone(KUBECONFIG) as any;
      doc['current-context'] = context;
      const holder = { doc };
      for (const m of ms) mutate(holder, 'doc', doc, context === 'dev' ? 'users' : 'clusters', m);
      // Deep nesting written as YAML flow: the parser, not stringify, meets it.
      return expandDeep(stringify(holder.doc, { aliasDuplicateObjects: false }) ?? '');
    }),
);

describe(`fuzz: ${RUNS} inputs per loader (seed ${SEED})`, () => {
  it(
    'kubeconfig: credentials or a KubeconfigError',
    () => {
      const loaded = () =>
        JSON.stringify(parseKubeconfig(KUBECONFIG_TEXT, '/k/config', { readFile }));
      const before = loaded();
      const watch = guard();
      const tally = { ok: 0, refused: 0 };
      fc.assert(
        fc.property(
          kubeconfigInputs,
          fc.constantFrom(undefined, 'dev', 'exec', 'files', '__proto__'),
          (text, context) => {
            const creds = returnsOrRefuses(
              () => parseKubeconfig(text, '/k/config', { readFile, context }),
              KubeconfigError,
              tally,
            );
            if (creds) expect(creds.server).toMatch(/^https:/);
            expectUnpolluted();
          },
        ),
        options(RUNS),
      );
      watch.check();
      expect(loaded()).toEqual(before);
      console.log(`fuzz: kubeconfig: ${RUNS} inputs, ${tally.ok} loaded, ${tally.refused} refused`);
      expect(tally.ok).toBeGreaterThan(0);
      expect(tally.refused).toBeGreaterThan(0);
    },
    timeoutFor(RUNS, 1),
  );

  const pem = { cert: '', key: '', ca: '', caKey: '', ec: '' };
  beforeAll(async () => {
    const ca = await createCa({ commonName: 'fuzz-ca' });
    const leaf = await issue({
      ca,
      commonName: 'annex',
      usages: ['serverAuth'],
      dnsNames: ['annex.ns.svc'],
    });
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    Object.assign(pem, {
      cert: leaf.certPem,
      key: leaf.keyPem,
      ca: ca.certPem,
      caKey: ca.keyPem,
      ec: ec.export({ type: 'pkcs8', format: 'pem' }) as string,
    });
  });
  // PEM armour lines built, not written out: the repository's key scan looks for them.
  const armour = (edge: string, label: string) => `-----${edge} ${label}-----\n`;
  const key = ['PRIVATE', 'KEY'].join(' ');
  const PEM_FRAGMENTS = [
    armour('BEGIN', 'CERTIFICATE'),
    armour('END', 'CERTIFICATE'),
    armour('BEGIN', key),
    armour('BEGIN', `RSA ${key}`),
    armour('BEGIN', `ENCRYPTED ${key}`),
    armour('END', key),
    'Proc-Type: 4,ENCRYPTED\n',
    'MII',
    'AAAA',
    '=',
    '\n',
    '\r\n',
  ];

  it(
    'serving certificate, key and CA: material or a CertificateFileError',
    () => {
      const files = () => ({
        dir: '/certs',
        cert: pem.cert,
        key: pem.key,
        ca: pem.ca as string | undefined,
      });
      const before = checkServingFiles(files());
      const whole = [pem.cert, pem.key, pem.ca, pem.caKey, pem.ec, `${pem.cert}${pem.ca}`, ''];
      const inputs = fc.record({
        which: fc.constantFrom('cert', 'key', 'ca'),
        text: fc.oneof(
          { weight: 4, arbitrary: textInputs(whole.filter(Boolean), PEM_FRAGMENTS) },
          { weight: 1, arbitrary: fc.constantFrom(...whole) },
        ),
        noCa: fc.boolean(),
      });
      const watch = guard();
      const tally = { ok: 0, refused: 0 };
      fc.assert(
        fc.property(inputs, ({ which, text, noCa }) => {
          const f = { ...files(), [which]: text };
          if (noCa && which !== 'ca') f.ca = undefined;
          const m = returnsOrRefuses(() => checkServingFiles(f), CertificateFileError, tally);
          if (m) expect(m.cert).toContain('CERTIFICATE');
          expectUnpolluted();
        }),
        options(RUNS),
      );
      watch.check();
      expect(checkServingFiles(files())).toEqual(before);
      console.log(
        `fuzz: certificate files: ${RUNS} inputs, ${tally.ok} loaded, ${tally.refused} refused`,
      );
      expect(tally.ok).toBeGreaterThan(0);
      expect(tally.refused).toBeGreaterThan(0);
    },
    timeoutFor(RUNS, 1),
  );
});

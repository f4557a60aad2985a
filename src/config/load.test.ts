import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { loadConfig } from './load.js';
import { UserError } from '../errors.js';
import { configSchema } from './schema.js';
import { defaultsConfig, namesConfig } from '../admission/config.js';
import { metricsConfig } from '../metrics/config.js';
import { policyConfig } from '../policy/config.js';
import { scalingConfig } from '../scaling/config.js';

const file = (text: string) => {
  const f = join(mkdtempSync(join(tmpdir(), 'annex-cfg-')), 'annex.yaml');
  writeFileSync(f, text);
  return f;
};

describe('loadConfig', () => {
  it('fills every default from the schema', () => {
    const c = loadConfig();
    expect(c.server).toEqual({
      host: '127.0.0.1',
      port: 8443,
      keepAliveTimeoutSeconds: 100,
      requestTimeoutSeconds: 30,
      handshakeTimeoutSeconds: 10,
      maxConnections: 8192,
      maxInFlight: { review: 400, discovery: 100, watch: 1000, requests: 400 },
      shutdownTimeoutSeconds: 15,
    });
    expect(c.tls.service).toBe('annex');
    expect(c.admission.defaults.requests).toEqual({ cpu: '100m', memory: '128Mi' });
  });

  it("places each built-in's declared section, its defaults those ajv fills in", () => {
    const c = loadConfig();
    // declareConfig reads `defaults` off the schema; ajv's useDefaults must agree with it.
    expect(c.metrics).toEqual(metricsConfig.defaults);
    expect(c.policy).toEqual(policyConfig.defaults);
    expect(c.scaling).toEqual(scalingConfig.defaults);
    expect(c.admission.names).toEqual(namesConfig.defaults);
    expect(c.admission.defaults).toEqual(defaultsConfig.defaults);
    expect(configSchema.properties.metrics).toBe(metricsConfig.schema);
  });

  it('layers file then overrides', () => {
    const c = loadConfig({
      file: file('server:\n  port: 9443\nlog:\n  level: warn\n'),
      overrides: { server: { host: '0.0.0.0' } },
    });
    expect(c.server).toMatchObject({ host: '0.0.0.0', port: 9443 });
    expect(c.log.level).toBe('warn');
  });

  it('names the bad field and the file', () => {
    expect(() => loadConfig({ file: file('server:\n  port: 70000\n') })).toThrow(
      /invalid configuration in .*annex\.yaml: server\.port must be <= 65535/,
    );
    expect(() => loadConfig({ file: file('server:\n  prot: 1\n') })).toThrow(
      /server must NOT have additional properties \(prot\)/,
    );
    expect(() => loadConfig({ overrides: { server: { keepAliveTimeoutSeconds: 30 } } })).toThrow(
      UserError,
    );
  });

  it('reports unreadable and non-YAML files as UserError', () => {
    expect(() => loadConfig({ file: '/nonexistent/annex.yaml' })).toThrow(
      /cannot read config file \/nonexistent\/annex\.yaml/,
    );
    expect(() => loadConfig({ file: file('server: [1, 2\n') })).toThrow(/is not valid YAML/);
    expect(() => loadConfig({ file: file('- 1\n') })).toThrow(/must hold a mapping/);
  });

  it('writes no YAML warning to stderr for an unknown tag or directive', () => {
    // A Node warning would be a line outside annex's JSON logs, quoting the file.
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      // The tagged value stays a string, which the schema then refuses: a clear error, no warning.
      expect(() =>
        loadConfig({ file: file('%FOO bar\n---\nserver: { port: !odd 8443 }\n') }),
      ).toThrow(UserError);
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
  });
});

import { describe, expect, it } from 'vitest';
import { pathFault } from './check.js';

describe('pathFault: paths checked against the built-in kinds', () => {
  it('accepts paths that can match something', () => {
    for (const [path, kinds] of [
      ['$.spec.volumes[*].hostPath', ['Pod']],
      ['$.spec.template.spec.containers[*].image', ['apps/Deployment', 'apps/StatefulSet']],
      ["$.metadata.labels['app.kubernetes.io/name']", ['Pod']],
      ['$.metadata.annotations.anything', ['Pod']],
      ['$..containers[*].image', ['Pod', 'apps/Deployment']],
      ['$..hostNetwork', ['batch/CronJob']],
      ['$.spec.containers[?(@.name == "a")].securityContext.privileged', ['Pod']],
      ['$.spec.containers[0,1].name', ['Pod']],
      ['$.spec.containers[1:].name', ['Pod']],
      ['$.spec.containers.length', ['Pod']],
      ['$.data.v', ['ConfigMap']],
      ['$.spec.*.hostPath', ['Pod']],
      ['$.spec.template.spec.containers[*].resources.limits.cpu', ['apps/Deployment']],
      ["$['spec']['hostPID','hostIPC']", ['Pod']],
      ['$.spec.strategy.rollingUpdate.maxSurge', ['apps/Deployment']],
      ['$.spec.hostNetwork', ['Pod', 'apps/Deployment']], // Pod has it: one kind is enough
      ['$.spec.volume', ['example.com/Widget']], // a kind without a schema here: not checked
      ['$.spec.volume', []],
    ] as const)
      expect(pathFault(path, kinds), path).toBeUndefined();
  });

  it('names the field that cannot exist, and the nearest one', () => {
    expect(pathFault('$.spec.volume[*].hostPath', ['Pod'])).toBe(
      'Pod has no field spec.volume (did you mean spec.volumes?)',
    );
    expect(pathFault('$.spec.template.spec.hostnetwork', ['apps/Deployment'])).toBe(
      'apps/Deployment has no field spec.template.spec.hostnetwork (did you mean spec.template.spec.hostNetwork?)',
    );
    expect(pathFault('$.spec.containers[*].zzzzzz', ['Pod'])).toBe(
      'Pod has no field spec.containers.zzzzzz',
    );
    expect(pathFault('$..hostNetwrk', ['apps/Deployment'])).toBe(
      'apps/Deployment has no field "hostNetwrk" at any depth below the object',
    );
  });

  it('knows a map holds values, not objects', () => {
    expect(pathFault('$.metadata.annotations.a.b', ['Pod'])).toBe(
      'Pod has no field metadata.annotations.a.b',
    );
  });

  it('says when a list is read as an object', () => {
    expect(pathFault('$.spec.containers.image', ['Pod'])).toBe(
      'Pod: spec.containers is a list, select its items first (spec.containers[*].image)',
    );
  });

  it('refuses only when no matched kind has the field (one message per kind)', () => {
    expect(pathFault('$.spec.hostNetwork', ['apps/Deployment', 'batch/Job'])).toBe(
      'apps/Deployment has no field spec.hostNetwork; batch/Job has no field spec.hostNetwork',
    );
  });
});

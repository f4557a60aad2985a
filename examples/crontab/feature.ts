// The seed's CronTab, fixed: v1beta1 (host, port) is stored, v1 adds `time`. With
// `conversion: strategy: None` a `time` written through v1 is pruned on the way into
// v1beta1 storage; here the conversion keeps it in an annotation, as upstream types keep
// the fields an older version lacks, and gives it back on the way up.
import { crdConversion, defineFeature, type KubeObject } from 'annex';

export interface CronTabV1beta1 extends KubeObject {
  host?: string;
  port?: string;
}

export interface CronTabV1 extends CronTabV1beta1 {
  time?: string;
}

/** Where v1beta1 keeps v1's `time`. */
export const TIME_ANNOTATION = 'crontab.example.com/time';

const str = { type: 'string' } as const;
const schema = (properties: Record<string, typeof str>) => ({
  openAPIV3Schema: { type: 'object', properties },
});

export const crontabs = crdConversion({
  group: 'example.com',
  kind: 'CronTab',
  plural: 'crontabs',
  hub: 'v1',
  versions: {
    v1beta1: {
      toHub(o: CronTabV1beta1): CronTabV1 {
        const { [TIME_ANNOTATION]: time, ...annotations } = o.metadata.annotations ?? {};
        if (time === undefined) return o;
        const metadata: CronTabV1['metadata'] = { ...o.metadata, annotations };
        if (Object.keys(annotations).length === 0) delete metadata.annotations;
        return { ...o, metadata, time };
      },
      fromHub({ time, ...o }: CronTabV1): CronTabV1beta1 {
        if (time === undefined) return o;
        const annotations = { ...o.metadata.annotations, [TIME_ANNOTATION]: time };
        return { ...o, metadata: { ...o.metadata, annotations } };
      },
    },
  },
  // annex owns the CRD: `annex manifests` renders it, the seed's schemas and all.
  crd: {
    scope: 'Namespaced',
    shortNames: ['ct'],
    versions: [
      { name: 'v1beta1', storage: true, schema: schema({ host: str, port: str }) },
      { name: 'v1', storage: false, schema: schema({ host: str, port: str, time: str }) },
    ],
  },
  description: 'CronTab (example.com): v1beta1 stored, v1 converted through annex.',
});

export default defineFeature({ name: 'crontab', conversions: [crontabs] });

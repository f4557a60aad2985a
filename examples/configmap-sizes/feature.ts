// A read-only aggregated resource: sizes.example.com/v1alpha1 ConfigMapSize, one per
// ConfigMap, with how many keys and bytes it holds, kept current from a watch.
import { defineFeature, mirror, ObjectStore, resource, type KubeObject, type Mirror } from 'annex';

type ConfigMap = KubeObject & {
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
};
const sizes = new ObjectStore();
let watch: Mirror | undefined;

function sizeOf({ metadata: { name, namespace, creationTimestamp }, ...cm }: ConfigMap) {
  const values = [...Object.values(cm.data ?? {}), ...Object.values(cm.binaryData ?? {})];
  const bytes = values.reduce((n, v) => n + Buffer.byteLength(v), 0);
  return { metadata: { name, namespace, creationTimestamp }, keys: values.length, bytes };
}

const kind = resource({
  kind: 'ConfigMapSize',
  description: 'How much one ConfigMap holds.',
  fields: {
    keys: { type: 'integer', description: 'Keys in data and binaryData.' },
    bytes: { type: 'integer', description: 'Bytes of all values.' },
  },
  columns: { Keys: '$.keys', Bytes: '$.bytes' },
  provider: sizes,
});

export default defineFeature({
  name: 'configmap-sizes',
  groups: [{ group: 'sizes.example.com', versions: ['v1alpha1'], resources: [kind] }],
  start: ({ kube }) => void (watch = mirror(kube!, '/api/v1/configmaps', sizes, sizeOf)),
  stop: () => watch?.stop(),
  ready: () => watch?.synced() || 'ConfigMaps not listed yet',
});

// The two bench rules as a user writes them with annex's public API (README "Build your
// own"), served by `annex serve --load` at /validate/bench-names.bench.annex.dev and
// /mutate/bench-defaults.bench.annex.dev.
import {
  allow,
  defineFeature,
  denyInvalid,
  invalidField,
  mutate,
  mutatingWebhook,
  validateName,
  validatingWebhook,
} from 'annex';

const names = validatingWebhook({
  name: 'bench-names.bench.annex.dev',
  match: { kinds: ['apps/Deployment'], operations: ['CREATE'] },
  admit(req) {
    const name = req.object?.metadata?.name ?? '';
    const errors = validateName('dns1123-label', name);
    return errors.length
      ? denyInvalid(req, [invalidField('metadata.name', name, errors.join(', '))])
      : allow();
  },
});

const defaults = mutatingWebhook({
  name: 'bench-defaults.bench.annex.dev',
  match: { kinds: ['apps/Deployment'], operations: ['CREATE'] },
  admit(req) {
    const object = req.object;
    if (!object) return allow();
    object.metadata.labels = { ...object.metadata.labels, 'bench.annex.dev/mutated': 'true' };
    for (const c of object.spec?.template?.spec?.containers ?? []) {
      if (!c.resources?.requests) {
        c.resources = { ...c.resources, requests: { cpu: '100m', memory: '128Mi' } };
      }
    }
    return mutate(object);
  },
});

export default defineFeature({ name: 'bench', webhooks: [names, defaults] });

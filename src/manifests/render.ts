// The registration objects the API server needs, rendered from the declarations: one
// Validating/MutatingWebhookConfiguration per webhook, one APIService per served
// group/version, and per CRD conversion the CRD (or the part of it annex owns). The committed YAML under webhooks/ and apiservice/ is this rendering
// (`annex manifests --write`); a test fails when they drift.
import { stringify } from 'yaml';
import type { GroupVersionDecl } from '../core/types.js';
import type { Config } from '../config/load.js';
import type { Feature } from '../core/feature.js';
import { webhookPath, type Webhook } from '../admission/webhook.js';
import { conversionPath, type Conversion } from '../conversion/declare.js';

/** Where the API server dials annex: a Service (in a cluster) on annex's port. */
export interface ServiceRef {
  namespace: string;
  name: string;
  port: number;
}

const LABELS = (component: string) => ({
  'app.kubernetes.io/name': 'annex',
  'app.kubernetes.io/part-of': 'annex',
  'app.kubernetes.io/component': component,
});

/** Never sent to annex: annex being down must not block the Pods that would bring it back. */
export const protectedNamespaces = (service: ServiceRef) => ({
  matchExpressions: [
    {
      key: 'kubernetes.io/metadata.name',
      operator: 'NotIn' as const,
      values: [...new Set(['kube-system', service.namespace])],
    },
  ],
});

export function webhookConfiguration(w: Webhook, service: ServiceRef): Record<string, unknown> {
  const mutating = w.type === 'mutating';
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: mutating ? 'MutatingWebhookConfiguration' : 'ValidatingWebhookConfiguration',
    metadata: { name: w.configuration, labels: LABELS('admission') },
    webhooks: w.registrations.map((r) => ({
      name: r.name,
      clientConfig: { service: { ...service, path: webhookPath(w) } },
      rules: r.rules,
      failurePolicy: r.failurePolicy ?? 'Fail',
      matchPolicy: r.matchPolicy ?? 'Equivalent',
      sideEffects: r.sideEffects ?? 'None',
      timeoutSeconds: r.timeoutSeconds ?? 10,
      ...(mutating ? { reinvocationPolicy: r.reinvocationPolicy ?? 'Never' } : {}),
      admissionReviewVersions: ['v1', 'v1beta1'],
      namespaceSelector: r.namespaceSelector ?? protectedNamespaces(service),
      ...(r.objectSelector ? { objectSelector: r.objectSelector } : {}),
    })),
  };
}

export function apiServices(g: GroupVersionDecl, service: ServiceRef): Record<string, unknown>[] {
  return g.versions.map((version, i) => ({
    apiVersion: 'apiregistration.k8s.io/v1',
    kind: 'APIService',
    metadata: { name: `${version}.${g.group}`, labels: LABELS('aggregated-api') },
    spec: {
      group: g.group,
      version,
      groupPriorityMinimum: g.apiService?.groupPriorityMinimum ?? 100,
      versionPriority: g.apiService?.versionPriority?.[version] ?? 100 * (g.versions.length - i),
      service,
    },
  }));
}

/** Where the API server dials a conversion: annex's Service, or a URL (annex outside the cluster). */
export type ClientTarget = ServiceRef | { url: string };

/** The CRD's spec.conversion: a webhook at /convert/<name>, ConversionReview v1 only. */
export function crdConversionSpec(c: Conversion, target: ClientTarget): Record<string, unknown> {
  const path = conversionPath(c);
  return {
    strategy: 'Webhook',
    webhook: {
      clientConfig:
        'url' in target
          ? { url: `${target.url.replace(/\/+$/, '')}${path}` }
          : { service: { ...target, path } },
      conversionReviewVersions: ['v1'],
    },
  };
}

/**
 * The CustomResourceDefinition of a conversion. A declaration that owns its CRD (`crd`)
 * gets all of it: one source for schemas and conversion. Otherwise only what annex owns,
 * `metadata.name` and `spec.conversion`: a fragment for server-side apply (`kubectl apply
 * --server-side --field-manager=annex`), which merges it into the CRD its owner applies,
 * each manager keeping its own fields, where a full CRD from annex would fight theirs.
 */
export function customResourceDefinition(
  c: Conversion,
  target: ClientTarget,
): Record<string, unknown> {
  const conversion = crdConversionSpec(c, target);
  const head = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: c.crdName },
  };
  if (!c.crd) return { ...head, spec: { conversion } };
  const { scope, versions, singular, shortNames, categories } = c.crd;
  return {
    ...head,
    spec: {
      group: c.group,
      names: {
        plural: c.plural,
        singular: singular ?? c.kind.toLowerCase(),
        kind: c.kind,
        listKind: `${c.kind}List`,
        ...(shortNames?.length ? { shortNames } : {}),
        ...(categories?.length ? { categories } : {}),
      },
      scope: scope ?? 'Namespaced',
      versions: versions.map((v) => ({ ...v, served: v.served ?? true })),
      conversion,
    },
  };
}

/**
 * What annex needs to keep these CRDs' caBundle equal to its CA (tls.inject.crds) from
 * inside the cluster: get and patch on exactly these CRDs, by name.
 */
export function crdInjectorRbac(
  crdNames: string[],
  service: ServiceRef,
): Record<string, unknown>[] {
  const name = 'annex:crd-ca-injector';
  const labels = LABELS('conversion');
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name, labels },
      rules: [
        {
          apiGroups: ['apiextensions.k8s.io'],
          resources: ['customresourcedefinitions'],
          resourceNames: crdNames,
          verbs: ['get', 'patch'],
        },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ kind: 'ServiceAccount', name: service.name, namespace: service.namespace }],
    },
  ];
}

const conversionObjects = (cs: Conversion[], service: ServiceRef) =>
  cs.length
    ? [
        ...cs.map((c) => customResourceDefinition(c, service)),
        ...crdInjectorRbac(
          cs.map((c) => c.crdName),
          service,
        ),
      ]
    : [];

export interface Declarations {
  webhooks: Webhook[];
  conversions: Conversion[];
  groups: GroupVersionDecl[];
}

const slug = (group: string) => group.replaceAll('.', '-');

/** Repo-relative file → YAML text, each file led by its declaration's description. */
export function renderFiles(d: Declarations, service: ServiceRef): Map<string, string> {
  const files = new Map<string, string>();
  for (const w of d.webhooks) {
    files.set(
      `webhooks/${w.type}-${w.name}.yaml`,
      yamlFile([webhookConfiguration(w, service)], w.description),
    );
  }
  if (d.conversions.length) {
    const description = d.conversions.map((c) => c.description?.trim() ?? '').filter(Boolean);
    files.set(
      'conversions/conversions.yaml',
      yamlFile(conversionObjects(d.conversions, service), description.join('\n') || undefined),
    );
  }
  for (const g of d.groups) {
    files.set(
      `apiservice/${slug(g.group)}/apiservice.yaml`,
      yamlFile(apiServices(g, service), g.apiService?.description),
    );
  }
  return files;
}

const HEADER = [
  'Applied by annex itself once ready (registration.apply), caBundle filled; or by hand',
  'with `annex certs inject` for the caBundle.',
  'Rendered by `npm run manifests` from the declarations in src/: do not edit.',
];

function yamlFile(objs: Record<string, unknown>[], description?: string, header = true): string {
  const comment = [
    ...(description ? description.trim().split('\n') : []),
    ...(header ? HEADER : []),
  ]
    .map((l) => `# ${l}`.trimEnd())
    .join('\n');
  return `${comment}\n${objs.map((o) => stringify(o, { lineWidth: 0, aliasDuplicateObjects: false })).join('---\n')}`;
}

/** Every rendered object, in file order (for `annex manifests` and `kubectl apply -f -`). */
export function renderObjects(d: Declarations, service: ServiceRef): Record<string, unknown>[] {
  return [
    ...d.webhooks.map((w) => webhookConfiguration(w, service)),
    ...conversionObjects(d.conversions, service),
    ...d.groups.flatMap((g) => apiServices(g, service)),
  ];
}

/**
 * The registration objects as the install creates them, before annex runs: webhook
 * configurations with no webhooks (nothing is called) and APIServices without a caBundle
 * (unavailable: only their own group fails, no other request). A webhook declared
 * `enforcedBeforeReady` keeps its rules, without a caBundle: the writes it guards fail
 * (failurePolicy Fail) until annex registers itself. They exist so that annex
 * may apply the real ones with `patch` on exactly these names: server-side apply of an
 * object that does not exist needs `create`, which RBAC cannot limit by name.
 */
export function renderPlaceholders(
  d: Declarations,
  service: ServiceRef,
): Record<string, unknown>[] {
  const enforced = new Set(
    d.webhooks.filter((w) => w.enforcedBeforeReady).map((w) => w.configuration),
  );
  return renderObjects(d, service).map((o) =>
    'webhooks' in o && !enforced.has((o.metadata as { name: string }).name)
      ? { ...o, webhooks: [] }
      : o,
  );
}

/**
 * annex:registration: patch on exactly the names annex registers (rendered from the same
 * declarations as the placeholders, so turning a group on brings its RBAC along), and
 * list/watch of APIServices to see who else serves a shared group (ownership.ts).
 */
export function registrationRbac(d: Declarations, service: ServiceRef): Record<string, unknown>[] {
  const objs = renderObjects(d, service) as { kind: string; metadata: { name: string } }[];
  const names = (kind: string) => [
    ...new Set(objs.filter((o) => o.kind === kind).map((o) => o.metadata.name)),
  ];
  const patch = (group: string, resource: string, kind: string) => {
    const n = names(kind).sort();
    // An empty resourceNames would allow every name: no rule instead.
    return n.length
      ? [{ apiGroups: [group], resources: [resource], resourceNames: n, verbs: ['patch'] }]
      : [];
  };
  const name = 'annex:registration';
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name },
      rules: [
        ...patch('apiregistration.k8s.io', 'apiservices', 'APIService'),
        ...(d.groups.some((g) => g.apiService?.shared)
          ? [
              {
                apiGroups: ['apiregistration.k8s.io'],
                resources: ['apiservices'],
                verbs: ['list', 'watch'],
              },
            ]
          : []),
        ...patch(
          'admissionregistration.k8s.io',
          'validatingwebhookconfigurations',
          'ValidatingWebhookConfiguration',
        ),
        ...patch(
          'admissionregistration.k8s.io',
          'mutatingwebhookconfigurations',
          'MutatingWebhookConfiguration',
        ),
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ kind: 'ServiceAccount', name: service.name, namespace: service.namespace }],
    },
  ];
}

/** manifests/registrations.yaml: the placeholders for the base's own config, and their RBAC. */
export function placeholdersFile(d: Declarations, service: ServiceRef): string {
  return yamlFile(
    [...renderPlaceholders(d, service), ...registrationRbac(d, service)],
    [
      'Placeholders for what annex registers itself once ready (registration.apply): no',
      'webhooks, no caBundle, so nothing calls annex before a replica can answer, and annex',
      'needs only `patch` on these names (annex:registration, last in this file). A webhook that',
      'must hold from the start keeps its rules without a caBundle: its writes fail until then.',
      'Rendered by `npm run manifests` from the declarations and manifests/config.yaml.',
    ].join('\n'),
    false,
  );
}

export const declarationsOf = (features: readonly Feature[]): Declarations => ({
  webhooks: features.flatMap((f) => f.webhooks ?? []),
  conversions: features.flatMap((f) => f.conversions ?? []),
  groups: features.flatMap((f) => f.groups ?? []),
});

/** The Service the API server dials, as the configuration names it. */
export const serviceRefOf = (config: Config): ServiceRef => ({
  namespace: config.tls.namespace,
  name: config.tls.service,
  port: config.registration.servicePort || config.server.port || 8443,
});

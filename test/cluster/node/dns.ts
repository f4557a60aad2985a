// The node's cluster DNS, as kubeadm and minikube install it: CoreDNS as the Deployment
// `coredns` in kube-system behind the Service `kube-dns` at a fixed ClusterIP, which the
// kubelet writes into every ClusterFirst Pod's resolv.conf (with the search path
// <ns>.svc.cluster.local svc.cluster.local cluster.local, so `queue.shop` resolves).
// No `forward`: no upstream resolver is reachable from the namespace; names outside
// cluster.local fail fast instead of timing out.

/** kubelet clusterDNS; inside the Service range (10.0.0.0/24), as kubeadm's .10. */
export const CLUSTER_DNS_IP = '10.0.0.10';
export const CLUSTER_DOMAIN = 'cluster.local';
export const COREDNS_IMAGE = 'localhost/annex-coredns:local';

const COREFILE = `.:53 {
    errors
    health {
        lameduck 2s
    }
    ready
    kubernetes ${CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    cache 30
    loadbalance
}
`;

const labels = { 'k8s-app': 'kube-dns' };
const meta = (name: string, namespaced = true) => ({
  name,
  ...(namespaced ? { namespace: 'kube-system' } : {}),
  labels,
});

/** The objects to apply: a List `kubectl apply -f -` reads. */
export function clusterDnsManifest(): object {
  const items = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta('coredns') },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: meta('system:coredns', false),
      rules: [
        {
          apiGroups: [''],
          resources: ['services', 'pods', 'namespaces'],
          verbs: ['list', 'watch'],
        },
        {
          apiGroups: ['discovery.k8s.io'],
          resources: ['endpointslices'],
          verbs: ['list', 'watch'],
        },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: meta('system:coredns', false),
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: 'system:coredns',
      },
      subjects: [{ kind: 'ServiceAccount', name: 'coredns', namespace: 'kube-system' }],
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: meta('coredns'),
      data: { Corefile: COREFILE },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta('coredns'),
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: 'coredns',
            priorityClassName: 'system-cluster-critical',
            // Its own resolv.conf must not point at itself.
            dnsPolicy: 'Default',
            terminationGracePeriodSeconds: 5,
            securityContext: {
              runAsNonRoot: true,
              // Port 53 without root or file capabilities: a namespaced, safe sysctl.
              sysctls: [{ name: 'net.ipv4.ip_unprivileged_port_start', value: '0' }],
              seccompProfile: { type: 'RuntimeDefault' },
            },
            containers: [
              {
                name: 'coredns',
                image: COREDNS_IMAGE,
                imagePullPolicy: 'Never',
                args: ['-conf', '/etc/coredns/Corefile'],
                ports: [
                  { name: 'dns', containerPort: 53, protocol: 'UDP' },
                  { name: 'dns-tcp', containerPort: 53, protocol: 'TCP' },
                ],
                readinessProbe: { httpGet: { path: '/ready', port: 8181 }, periodSeconds: 1 },
                livenessProbe: { httpGet: { path: '/health', port: 8080 }, periodSeconds: 10 },
                resources: { requests: { cpu: '10m', memory: '32Mi' } },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { drop: ['ALL'] },
                },
                volumeMounts: [{ name: 'config', mountPath: '/etc/coredns', readOnly: true }],
              },
            ],
            volumes: [{ name: 'config', configMap: { name: 'coredns' } }],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta('kube-dns'),
      spec: {
        selector: labels,
        clusterIP: CLUSTER_DNS_IP,
        ports: [
          { name: 'dns', port: 53, protocol: 'UDP', targetPort: 53 },
          { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: 53 },
        ],
      },
    },
  ];
  return { apiVersion: 'v1', kind: 'List', items };
}

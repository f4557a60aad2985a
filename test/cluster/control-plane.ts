// The control plane lives in src/devcluster/ (it also backs `annex demo`).
export { ControlPlane, freePort, type ClusterInfo } from '../../src/devcluster/control-plane.js';

/**
 * What the suites that watch a HorizontalPodAutoscaler run of kube-controller-manager:
 * the controllers an HPA needs, syncing every second and scaling down at once.
 */
export const HPA_CONTROLLERS = {
  controllers: [
    'deployment-controller',
    'replicaset-controller',
    'horizontal-pod-autoscaler-controller',
  ],
  args: [
    '--horizontal-pod-autoscaler-sync-period=1s',
    '--horizontal-pod-autoscaler-downscale-stabilization=0s',
  ],
};

// The control plane lives in src/devcluster/ (it also backs `annex demo`).
export { ControlPlane, freePort, type ClusterInfo } from '../../src/devcluster/control-plane.js';

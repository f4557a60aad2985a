// What `annex defaults` prints where the API server would put a value it picks at random or
// from the clock: a placeholder, so the output never passes a made-up value for a real one.
// - `<allocated>`: metadata.uid (and the Job labels and selector that repeat it), a
//   Service's clusterIP/clusterIPs, nodePorts and healthCheckNodePort;
// - `<now>`: metadata.creationTimestamp;
// - `<random>`: the 5 random characters of a generated name (`web-<random>` from
//   generateName `web-`, the `kube-api-access-<random>` token volume).
export const PLACEHOLDERS = {
  allocated: '<allocated>',
  now: '<now>',
  random: '<random>',
} as const;

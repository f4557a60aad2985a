// A Prometheus metric of annex's, registered once per registry (prom-client's default one
// unless given): a module evaluated again (tests, a feature made twice) gets the metric
// already registered under that name back, where `new Counter` would throw.
import {
  Counter,
  Gauge,
  Histogram,
  register,
  type CounterConfiguration,
  type GaugeConfiguration,
  type HistogramConfiguration,
  type Registry,
} from 'prom-client';

const once = <M>(name: string, registry: Registry, make: () => M): M =>
  (registry.getSingleMetric(name) as M | undefined) ?? make();

export const counter = <T extends string>(c: CounterConfiguration<T>, registry = register) =>
  once(c.name, registry, () => new Counter<T>({ ...c, registers: [registry] }));

export const gauge = <T extends string>(c: GaugeConfiguration<T>, registry = register) =>
  once(c.name, registry, () => new Gauge<T>({ ...c, registers: [registry] }));

export const histogram = <T extends string>(c: HistogramConfiguration<T>, registry = register) =>
  once(c.name, registry, () => new Histogram<T>({ ...c, registers: [registry] }));

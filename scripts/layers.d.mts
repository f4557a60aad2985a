// Types of scripts/layers.mjs, for test/unit/layering.test.ts.
export interface Layer {
  name: string;
  keys: string[];
}
export interface Import {
  target: string;
  names: string[];
}
export interface Upward {
  from: string;
  to: string;
  file: string;
  target: string;
}
export interface PrivateImport {
  feature: string;
  file: string;
  module: string;
  name: string;
}
export const root: string;
export const src: string;
export const LAYERS: Layer[];
export const BUILTIN_FEATURES: string[];
export const PRIVATE_IMPORTS: Record<string, string>;
export function readLayers(doc?: string): Layer[];
export function layerOf(key: string): number;
export function keyOf(path: string, dir?: string): string;
export function sources(dir?: string): Generator<string>;
export function importsOf(file: string): Import[];
export function importGraph(
  dir?: string,
  layers?: Layer[],
): { edges: Map<string, number>; upward: Upward[] };
export function privateImports(): PrivateImport[];

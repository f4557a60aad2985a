// meta.k8s.io Table output: kubectl asks the server for the columns of kinds it does not
// know (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`). Columns come from the
// declaration, always after a Name column as kube-apiserver's default convertor does;
// `date` cells become ages ("5m") like CRD printer columns; `includeObject` chooses
// what each row carries (default Metadata → PartialObjectMetadata).
import { compilePath } from './jsonpath.js';
import { badRequest } from '../core/status.js';
import type { KubeObject, ResourceDecl, TableColumn } from '../core/types.js';

export type IncludeObject = 'None' | 'Metadata' | 'Object';

export interface TableColumnDefinition {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

export interface TableRow {
  cells: unknown[];
  object?: unknown;
}

export interface Table {
  kind: 'Table';
  apiVersion: string;
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  columnDefinitions?: TableColumnDefinition[];
  rows: TableRow[];
}

export interface TableOptions {
  /** meta.k8s.io version the client asked for: v1 or v1beta1. */
  version: string;
  includeObject: IncludeObject;
  /** Omit columnDefinitions (watch events after the first, as upstream). */
  noHeaders?: boolean;
  /** apiVersion to stamp on full objects (the group/version being served). */
  apiVersion: string;
  now?: Date;
  /** Written into each row's object (ResourceDecl.creationTimestampIsNow). */
  creationTimestamp?: string;
}

const NAME_COLUMN: TableColumnDefinition = {
  name: 'Name',
  type: 'string',
  format: 'name',
  description: 'Name of the resource',
  priority: 0,
};

/** `includeObject` query value; empty means Metadata. */
export function includeObjectOf(query: URLSearchParams): IncludeObject {
  const v = query.get('includeObject') ?? '';
  if (v === '' || v === 'Metadata') return 'Metadata';
  if (v === 'None' || v === 'Object') return v;
  throw badRequest(`unrecognized includeObject value: ${JSON.stringify(v)}`);
}

function ownColumns(decl: ResourceDecl): TableColumn[] {
  // A declaration that lists its own Name column replaces ours instead of doubling it.
  return decl.columns.filter((c) => c.name.toLowerCase() !== 'name');
}

export function columnDefinitions(decl: ResourceDecl): TableColumnDefinition[] {
  return [
    NAME_COLUMN,
    ...ownColumns(decl).map((c) => ({
      name: c.name,
      type: c.type,
      format: c.format ?? '',
      description: c.description,
      priority: c.priority ?? 0,
    })),
  ];
}

/** apimachinery duration.HumanDuration: "45s", "5m3s", "3h", "12d", "2y10d". */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(seconds / 3600);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8)
    return hours % 24 === 0 ? `${hours / 24}d` : `${Math.floor(hours / 24)}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const days = Math.floor(hours / 24);
    const years = Math.floor(days / 365);
    return days % 365 === 0 ? `${years}y` : `${years}y${days % 365}d`;
  }
  return `${Math.floor(hours / 24 / 365)}y`;
}

type CellFn = (o: KubeObject, now: number) => unknown;

const cellCache = new WeakMap<ResourceDecl, CellFn[]>();
/**
 * Cells by object, for declarations without date columns (no cell depends on the time):
 * objects are immutable, so a 10,000-row Table computes only the rows that changed.
 */
const rowCache = new WeakMap<ResourceDecl, WeakMap<KubeObject, unknown[]>>();

function cellsOf(decl: ResourceDecl, o: KubeObject, now: number): unknown[] {
  const fns = cellFns(decl);
  let byObject = rowCache.get(decl);
  if (!byObject) {
    if (decl.columns.some((c) => c.type === 'date')) return fns.map((f) => f(o, now));
    byObject = new WeakMap();
    rowCache.set(decl, byObject);
  }
  let cells = byObject.get(o);
  if (!cells) {
    cells = fns.map((f) => f(o, now));
    byObject.set(o, cells);
  }
  return cells;
}

function cellFns(decl: ResourceDecl): CellFn[] {
  const hit = cellCache.get(decl);
  if (hit) return hit;
  const fns: CellFn[] = [
    (o) => o.metadata.name,
    ...ownColumns(decl).map((c): CellFn => {
      const get = c.value ?? compilePath(c.jsonPath);
      return (o, now) => {
        let v: unknown;
        try {
          v = get(o);
        } catch {
          // One odd object must not fail the whole table: kubectl prints <none>.
          v = undefined;
        }
        if (v === undefined || v === null) return null;
        if (c.type === 'date' && typeof v === 'string') {
          const t = Date.parse(v);
          return Number.isNaN(t) ? v : humanDuration(now - t);
        }
        return typeof v === 'object' ? JSON.stringify(v) : v;
      };
    }),
  ];
  cellCache.set(decl, fns);
  return fns;
}

function rowObject(o: KubeObject, decl: ResourceDecl, opts: TableOptions): unknown {
  const time = opts.creationTimestamp;
  const metadata = time === undefined ? o.metadata : { ...o.metadata, creationTimestamp: time };
  switch (opts.includeObject) {
    case 'None':
      return undefined;
    case 'Metadata':
      return { kind: 'PartialObjectMetadata', apiVersion: `meta.k8s.io/${opts.version}`, metadata };
    case 'Object':
      return { ...o, apiVersion: opts.apiVersion, kind: decl.kind, metadata };
  }
}

export function toTable(
  decl: ResourceDecl,
  objects: readonly KubeObject[],
  listMeta: Table['metadata'],
  opts: TableOptions,
): Table {
  const now = (opts.now ?? new Date()).getTime();
  const rows = objects.map((o): TableRow => {
    const row: TableRow = { cells: cellsOf(decl, o, now) };
    const obj = rowObject(o, decl, opts);
    if (obj !== undefined) row.object = obj;
    return row;
  });
  return {
    kind: 'Table',
    apiVersion: `meta.k8s.io/${opts.version}`,
    metadata: listMeta,
    ...(opts.noHeaders ? {} : { columnDefinitions: columnDefinitions(decl) }),
    rows,
  };
}

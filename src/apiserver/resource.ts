// A ResourceDecl from the few facts that differ between resources; the rest takes the
// defaults a Kubernetes user would guess (plural = kind + "s", namespaced, get/list/watch).
import type { JsonSchema, Provider, ResourceDecl, TableColumn, Verb } from '../core/types.js';

export interface ResourceInit {
  kind: string;
  /** Default: the kind lower-cased plus "s". */
  plural?: string;
  /** Default: the kind lower-cased. */
  singular?: string;
  shortNames?: string[];
  /** Default true. */
  namespaced?: boolean;
  /** Default get, list, and watch when the provider can subscribe. */
  verbs?: Verb[];
  /** What one object is: `kubectl explain`'s DESCRIPTION. */
  description: string;
  /** The top-level fields besides apiVersion, kind and metadata. */
  fields: Record<string, JsonSchema>;
  /**
   * Table columns after Name: header → JSONPath, or `{ jsonPath, priority: 1 }` for a column
   * only `-o wide` shows; type and description come from the field.
   */
  columns?: Record<string, string | { jsonPath: string; priority: number }>;
  selectableFields?: Record<string, string>;
  provider: Provider;
}

const CELL_TYPES = new Set(['string', 'integer', 'number', 'boolean']);

export function resource(init: ResourceInit): ResourceDecl {
  const lower = init.kind.toLowerCase();
  const columns = Object.entries(init.columns ?? {}).map(([name, column]): TableColumn => {
    const { jsonPath, priority } =
      typeof column === 'string' ? { jsonPath: column, priority: 0 } : column;
    const field = init.fields[/^\$\.([^.[]+)$/.exec(jsonPath)?.[1] ?? ''] ?? {};
    // A date-time string is shown as an age ("5m"), as CRD printer columns of type date.
    const type =
      field.format === 'date-time'
        ? 'date'
        : CELL_TYPES.has(field.type as string)
          ? (field.type as TableColumn['type'])
          : 'string';
    const description = typeof field.description === 'string' ? field.description : name;
    return { name, type, description, jsonPath, priority };
  });
  return {
    kind: init.kind,
    plural: init.plural ?? `${lower}s`,
    singular: init.singular ?? lower,
    ...(init.shortNames ? { shortNames: init.shortNames } : {}),
    namespaced: init.namespaced ?? true,
    verbs: init.verbs ?? (init.provider.subscribe ? ['get', 'list', 'watch'] : ['get', 'list']),
    schema: { type: 'object', description: init.description, properties: init.fields },
    columns,
    ...(init.selectableFields ? { selectableFields: init.selectableFields } : {}),
    provider: init.provider,
  };
}

// metav1.Condition and apimachinery's meta.SetStatusCondition: a status condition is
// replaced by type, and its lastTransitionTime moves only when its status changes.
import type { JsonSchema } from './types.js';

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  /** CamelCase, machine-readable. */
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime: string;
}

/** `conditions` with `next` set: its lastTransitionTime kept if the status is unchanged, else `now`. */
export function setCondition(
  conditions: readonly Condition[],
  next: Omit<Condition, 'lastTransitionTime'>,
  now: Date,
): Condition[] {
  const old = conditions.find((c) => c.type === next.type);
  const lastTransitionTime =
    old && old.status === next.status ? old.lastTransitionTime : now.toISOString();
  const updated: Condition = { ...next, lastTransitionTime };
  return old ? conditions.map((c) => (c === old ? updated : c)) : [...conditions, updated];
}

/** The JSON Schema of a `conditions` list, as CRDs declare metav1.Condition (a map keyed by type). */
export const conditionsSchema = (description: string): JsonSchema => ({
  type: 'array',
  description,
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['type'],
  items: {
    type: 'object',
    required: ['type', 'status', 'reason', 'message', 'lastTransitionTime'],
    properties: {
      type: { type: 'string', description: 'The condition.', maxLength: 316 },
      status: {
        type: 'string',
        description: 'True, False or Unknown.',
        enum: ['True', 'False', 'Unknown'],
      },
      reason: {
        type: 'string',
        description: 'Why, in one CamelCase word.',
        maxLength: 1024,
      },
      message: { type: 'string', description: 'Why, for humans.', maxLength: 32768 },
      observedGeneration: {
        type: 'integer',
        description: 'The metadata.generation the condition was set for.',
        minimum: 0,
      },
      lastTransitionTime: {
        type: 'string',
        description: 'When status last changed.',
        format: 'date-time',
      },
    },
  },
});

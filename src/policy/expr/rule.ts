// A CEL expression of an AdmissionPolicy, compiled once: parsed, its functions checked
// against what annex implements, planned. The text is kept verbatim: the API server gets
// exactly it (cel/compile.ts), so the webhook, `annex check` and the API server evaluate
// the same expression.
import { celEnv, isCelError, parse, plan, type CelResult } from '@bufbuild/cel';
import { FUNCS, GLOBAL_ONLY, NAMESPACES, re2 } from './libraries.js';

/** The variables VAP gives every expression. */
export const CEL_ROOTS = ['object', 'oldObject', 'request', 'namespaceObject', 'variables'];

const env = celEnv({ funcs: FUNCS, re2 });

export interface CompiledExpression {
  text: string;
  /** Evaluates with the bindings; a CelError (never a throw) when evaluation fails. */
  run(bindings: Record<string, unknown>): CelResult;
  /** The `variables.<name>` it reads: an errored variable makes it fail, as VAP's lazy variables do. */
  reads: ReadonlySet<string>;
}

/** Operators the planner evaluates itself (short-circuiting), not through the function table. */
const SPECIAL = new Set(['_&&_', '_||_', '_?_:_', '_[_]', '@not_strictly_false']);

type Node = Record<string, unknown>;
const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null;

/** Every Expr node under `n`, depth first (the AST is plain protobuf-es messages). */
function* exprs(n: unknown): Generator<Node> {
  if (Array.isArray(n)) {
    for (const x of n) yield* exprs(x);
    return;
  }
  if (!isNode(n)) return;
  if (n.$typeName === 'cel.expr.Expr') yield n;
  for (const [k, v] of Object.entries(n)) if (k !== '$typeName' && isNode(v)) yield* exprs(v);
}

const kind = (e: Node) => e.exprKind as { case?: string; value?: Node };
const identName = (e: unknown) =>
  isNode(e) && kind(e).case === 'identExpr' ? String(kind(e).value?.name) : undefined;

/** The function a call names, with its namespace (`sets.contains`), for the unknown-function check. */
function callName(call: Node): string {
  const ns = identName(call.target);
  const fn = String(call.function);
  if (ns === undefined || !NAMESPACES.has(ns)) return fn;
  // A namespace is also a possible variable name (`ips.all(ip, ip.family() == 4)`): as the
  // planner does, a namespaced function first, else a method of that name, else the
  // namespaced name is what is missing (`lists.range()`).
  return env.funcs.find(`${ns}.${fn}`) || !env.funcs.find(fn) ? `${ns}.${fn}` : fn;
}

/**
 * Compiles `text`, or throws an Error naming the fault: a syntax error, a function annex
 * does not implement (the API server may; cel/compile.ts still sends it the text), or a
 * `variables.<name>` not among `known`.
 */
export function compileExpression(text: string, known: ReadonlySet<string>): CompiledExpression {
  let parsed;
  try {
    parsed = parse(text);
  } catch (e) {
    throw new Error(`syntax error: ${(e as Error).message}`);
  }
  const reads = new Set<string>();
  const missing = new Set<string>();
  for (const e of exprs(parsed.expr)) {
    const k = kind(e);
    if (k.case === 'callExpr' && k.value) {
      const name = callName(k.value);
      if (!SPECIAL.has(name) && !env.funcs.find(name)) missing.add(`${name}()`);
      if (GLOBAL_ONLY.has(name) && k.value.target !== undefined)
        throw new Error(`found no matching overload for '${name}' called as a method`);
    }
    if (k.case === 'selectExpr' && k.value && identName(k.value.operand) === 'variables') {
      const field = String(k.value.field);
      if (!known.has(field)) throw new Error(`undefined variable variables.${field}`);
      reads.add(field);
    }
  }
  if (missing.size) {
    const names = [...missing].join(', ');
    throw new Error(
      `${missing.size === 1 ? 'function' : 'functions'} ${names} ${missing.size === 1 ? 'is' : 'are'} not implemented by annex's in-process CEL`,
    );
  }
  const program = plan(env, parsed);
  return {
    text,
    reads,
    run: (bindings) => {
      try {
        return program(bindings as never);
      } catch (e) {
        return e as CelResult;
      }
    },
  };
}

/**
 * cel-go's words for @bufbuild/cel's errors, where the differential test found they differ
 * (the API server's message quotes them): a missing map key or field, division by zero.
 */
const CEL_GO_WORDS: [RegExp, string][] = [
  [/^field not found: /, 'no such key: '],
  [/^int divide by zero$/, 'division by zero'],
  [/^int modulus by zero$/, 'modulus by zero'],
];

/** The text of an evaluation error, in cel-go's words. */
export function errorText(r: unknown): string {
  const text = isCelError(r) ? r.message : r instanceof Error ? r.message : String(r);
  return CEL_GO_WORDS.reduce((t, [re, to]) => t.replace(re, to), text);
}

// Values of the Kubernetes CEL libraries' own types (kubernetes.Quantity, net.IP, …) in
// @bufbuild/cel, which knows no opaque values: each type is a one-field protobuf message
// made at load time. The field holds the value's equality key (CEL's `==` compares
// messages field by field, so two values are equal exactly when their keys are); the
// value itself (a Quantity's representation, which Kubernetes can change in place) is
// kept beside the message, by identity.
import { create, createFileRegistry, type DescMessage } from '@bufbuild/protobuf';
import { reflect, type ReflectMessage } from '@bufbuild/protobuf/reflect';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import { objectType, type CelObjectType } from '@bufbuild/cel';

export interface OpaqueType<T> {
  /** The CEL type, for function signatures. */
  type: CelObjectType;
  /** A CEL value holding `value`, equal to another when their `key`s are. */
  wrap(value: T, key: string): ReflectMessage;
  /** The value a CEL value of this type holds. */
  unwrap(v: unknown): T;
}

/** A CEL object type named `fullName` (`package.Name`). */
export function opaqueType<T>(fullName: string): OpaqueType<T> {
  const dot = fullName.lastIndexOf('.');
  const file = create(FileDescriptorProtoSchema, {
    name: `annex/${fullName}.proto`,
    package: fullName.slice(0, dot),
    syntax: 'proto3',
    messageType: [
      // Field type 9 is string; label 1 optional.
      { name: fullName.slice(dot + 1), field: [{ name: 'key', number: 1, type: 9, label: 1 }] },
    ],
  });
  const desc = createFileRegistry(file, () => undefined).getMessage(fullName) as DescMessage;
  const values = new WeakMap<object, T>();
  return {
    type: objectType(desc),
    wrap(value, key) {
      const m = create(desc, { key } as never);
      values.set(m, value);
      return reflect(desc, m);
    },
    unwrap(v) {
      const x = values.get((v as ReflectMessage).message);
      if (x === undefined) throw new Error(`no such overload: not a ${fullName}`);
      return x;
    },
  };
}

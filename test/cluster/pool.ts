/** `fn` over `items` with at most `concurrency` in flight; the results in the items' order. */
export async function pool<T, R>(
  items: readonly T[],
  fn: (item: T) => Promise<R>,
  concurrency = 8,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const k = next++;
      out[k] = await fn(items[k]!);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return out;
}

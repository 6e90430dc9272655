/**
 * A fixture several tests of a file read, run by whichever of them comes first: `run` runs once,
 * on the first call, and later calls share its result (or its failure). Tests stay independent
 * of their order without paying for the same backfill once per test.
 */
export function once<T>(run: () => Promise<T>): () => Promise<T> {
  let result: Promise<T> | undefined;
  return () => (result ??= run());
}

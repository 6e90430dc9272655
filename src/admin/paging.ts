/**
 * The lists of the admin pages are paged: `?page=N` (and, on a source's page, `?runs=N`). A
 * value that is not a whole number from 1 is refused (400, naming the parameter); a page past
 * the last shows the last, as the overview does.
 */

/** Larger page numbers are refused: nine digits keep every offset within Postgres's bigint and JS's safe integers. */
const PAGE_PARAM = /^\d{1,9}$/;

/** A page parameter as given (absent: 1), or the message of a 400 answer. */
export function readPageParam(name: string, value: string | undefined): number | { error: string } {
  const given = value ?? '1';
  const n = PAGE_PARAM.test(given) ? Number(given) : 0;
  if (n < 1) return { error: `${name}: invalid value ${JSON.stringify(given)}: expected a whole number from 1\n` };
  return n;
}

/** Where a page lies in a list of `total` rows: the page asked for, or the last when it is past it. */
export interface PagePlace {
  page: number;
  pages: number;
  limit: number;
  offset: number;
}

export function placePage(total: number, perPage: number, asked: number): PagePlace {
  const pages = Math.max(1, Math.ceil(total / perPage));
  const page = Math.min(Math.max(1, asked), pages);
  return { page, pages, limit: perPage, offset: (page - 1) * perPage };
}

/** `rows` in the order of `ids` (a read by ID returns them in its own order). */
export function inOrderOf<T>(ids: readonly string[], rows: readonly T[], idOf: (row: T) => string): T[] {
  const byId = new Map(rows.map((r) => [idOf(r), r]));
  return ids.flatMap((id) => {
    const row = byId.get(id);
    return row === undefined ? [] : [row];
  });
}

/**
 * Finished batch items kept as the JSON text already sent, so a repeated poll of a big batch
 * re-sends them instead of generating them again. A real upstream serves repeated reads from
 * storage; the simulator generates every ~20 KB transcript on each read, on the same CPU as the
 * client under test (the benchmark, on 2 cores). Bounded in bytes (string length, about bytes
 * for this ASCII-heavy JSON); whole jobs go, least recently read first. Off unless asked for.
 */
export class ItemCache {
  /**
   * job ID -> item index -> JSON and the video's edit generation it was made at (an item of a
   * video edited since is stale: made again); Map order is least recently read first
   */
  private readonly jobs = new Map<string, Map<number, { json: string; generation: number }>>();
  private size = 0;

  constructor(private readonly maxBytes: number) {}

  /** The item as kept, unless made at another edit generation of its video than `generation`. */
  get(jobId: string, index: number, generation = 0): string | undefined {
    const kept = this.jobs.get(jobId)?.get(index);
    return kept?.generation === generation ? kept.json : undefined;
  }

  set(jobId: string, index: number, json: string, generation = 0): void {
    const items = this.jobs.get(jobId) ?? new Map<number, { json: string; generation: number }>();
    // most recently read: last in the order of eviction
    this.jobs.delete(jobId);
    this.jobs.set(jobId, items);
    const before = items.get(index);
    if (before !== undefined) {
      this.size -= before.json.length;
      items.delete(index);
    }
    for (const [id, evicted] of this.jobs) {
      if (this.size + json.length <= this.maxBytes || id === jobId) break;
      for (const s of evicted.values()) this.size -= s.json.length;
      this.jobs.delete(id);
    }
    // this job alone fills the cache: the rest of it is generated on every read
    if (this.size + json.length > this.maxBytes) return;
    items.set(index, { json, generation });
    this.size += json.length;
  }

  /** characters held (about bytes) */
  get bytes(): number {
    return this.size;
  }
}

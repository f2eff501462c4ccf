package io.sluice.core.queue;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * Heap per queued item. Prints bytes per item measured with Runtime after GC; asserts only a
 * generous bound (the target: 10,000 held in under 20 MB including payload references).
 * Payloads are distinct small objects standing in for a stream callback handle.
 */
class TenantFairQueueHeapTest {
  private static final long SEC = 1_000_000_000L;
  private static final int ITEMS = 10_000;

  /** Stand-in for the adapter's per-request handle (one reference field). */
  record Handle(Object stream) {}

  @Test
  void offer_tenThousandItems_heldInUnderTwentyMegabytes() {
    String[] tenants = new String[500];
    for (int t = 0; t < tenants.length; t++) {
      tenants[t] = "tenant-" + t;
    }
    long before = usedAfterGc();
    TenantFairQueue<Handle> q =
        new TenantFairQueue<>(new QueueBounds(Long.MAX_VALUE / 4, ITEMS, 60 * SEC, 1.0));
    long now = 0;
    for (int i = 0; i < ITEMS; i++) {
      q.offer(
          new QueuedItem<>(
              i,
              tenants[i % tenants.length],
              1 + i % 3,
              100 + i % 900,
              now,
              now + 30 * SEC,
              now + 40 * SEC + i,
              new Handle(null)),
          now);
    }
    long after = usedAfterGc();
    long bytes = after - before;
    System.out.printf(
        "TenantFairQueue heap: %d items, %d bytes total, %d bytes/item (500 tenants)%n",
        q.depth(), bytes, bytes / ITEMS);

    assertThat(q.depth()).isEqualTo(ITEMS);
    assertThat(bytes).isLessThan(20L * 1024 * 1024);
  }

  private static long usedAfterGc() {
    Runtime rt = Runtime.getRuntime();
    long used = Long.MAX_VALUE;
    for (int i = 0; i < 5; i++) {
      System.gc();
      used = Math.min(used, rt.totalMemory() - rt.freeMemory());
    }
    return used;
  }
}

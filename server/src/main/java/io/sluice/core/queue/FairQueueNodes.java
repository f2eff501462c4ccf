package io.sluice.core.queue;

/**
 * The nodes of a {@link TenantFairQueue} and the three heaps that index them: each tenant's flow
 * (its items, earliest deadline first, and its SFQ tags), the backlogged flows by start tag, and
 * every item by expiry. Each node keeps its own slot in each heap, so removal is O(log n). Not
 * thread-safe: owned by one queue.
 */
final class FairQueueNodes {
  private FairQueueNodes() {}

  /** Queue node: the item plus its slots in the flow heap and the expiry heap. */
  static final class Entry<T> {
    final QueuedItem<T> item;
    final Flow<T> flow;
    final long expiresAtNanos;
    final long seq;
    int flowIndex = -1;
    int expiryIndex = -1;

    Entry(QueuedItem<T> item, Flow<T> flow, long expiresAtNanos, long seq) {
      this.item = item;
      this.flow = flow;
      this.expiresAtNanos = expiresAtNanos;
      this.seq = seq;
    }
  }

  /** One tenant: its SFQ tags and its items, earliest deadline first. */
  static final class Flow<T> extends IndexedHeap<Entry<T>> {
    final String tenant;
    double weight;
    double startTag;
    double lastFinishTag;
    long queuedWork;
    long activatedSeq;
    int activeIndex = -1;

    Flow(String tenant) {
      super(2);
      this.tenant = tenant;
    }

    @Override
    boolean before(Entry<T> a, Entry<T> b) {
      long d = a.item.deadlineNanos() - b.item.deadlineNanos();
      return d < 0 || (d == 0 && a.seq < b.seq);
    }

    @Override
    void slot(Entry<T> e, int index) {
      e.flowIndex = index;
    }
  }

  static final class ActiveFlows<T> extends IndexedHeap<Flow<T>> {
    ActiveFlows() {
      super(8);
    }

    @Override
    boolean before(Flow<T> a, Flow<T> b) {
      return a.startTag < b.startTag
          || (a.startTag == b.startTag && a.activatedSeq < b.activatedSeq);
    }

    @Override
    void slot(Flow<T> f, int index) {
      f.activeIndex = index;
    }
  }

  static final class ExpiryOrder<T> extends IndexedHeap<Entry<T>> {
    ExpiryOrder() {
      super(16);
    }

    @Override
    boolean before(Entry<T> a, Entry<T> b) {
      long d = a.expiresAtNanos - b.expiresAtNanos;
      return d < 0 || (d == 0 && a.seq < b.seq);
    }

    @Override
    void slot(Entry<T> e, int index) {
      e.expiryIndex = index;
    }
  }
}

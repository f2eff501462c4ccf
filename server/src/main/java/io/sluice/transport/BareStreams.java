package io.sluice.transport;

/**
 * The client streams of one HTTP/2 connection that were opened (HEADERS) and have not carried a
 * DATA payload yet, at most {@code capacity} of them: a stream id joins when its HEADERS open it
 * and leaves at its first DATA payload or its RST_STREAM. Past the bound the oldest leaves first (a
 * reset of a forgotten stream is then not counted: the bound errs toward not counting).
 *
 * <p>Client stream ids only grow, so the ids sit in a ring in ascending order; a removed id stays
 * as its negative (a tombstone that keeps the order) until it reaches either end. Lookups are a
 * check of the newest id (the rapid-reset shape: the stream just opened) then a binary search.
 *
 * <p>Concurrency: none; one connection's event loop owns it.
 */
final class BareStreams {
  private final int[] ids;
  private int head;
  private int size;

  BareStreams(int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("capacity: " + capacity + " (expected: >= 1)");
    }
    this.ids = new int[capacity];
  }

  /** Adds {@code id}, greater than every id added before; drops the oldest when full. */
  void add(int id) {
    if (size == ids.length) {
      head = next(head);
      size--;
      trimHead();
    }
    ids[slot(size)] = id;
    size++;
  }

  /** Removes {@code id}; whether it was here. */
  boolean remove(int id) {
    if (size == 0) {
      return false;
    }
    int last = slot(size - 1);
    if (ids[last] == id) {
      size--;
      trimTail();
      return true;
    }
    int lo = 0;
    int hi = size - 2;
    while (lo <= hi) {
      int mid = (lo + hi) >>> 1;
      int v = ids[slot(mid)];
      int abs = Math.abs(v);
      if (abs < id) {
        lo = mid + 1;
      } else if (abs > id) {
        hi = mid - 1;
      } else {
        if (v < 0) {
          return false;
        }
        ids[slot(mid)] = -id;
        trimHead();
        return true;
      }
    }
    return false;
  }

  /** How many ids are here (tombstones between live ids included). */
  int size() {
    return size;
  }

  private void trimHead() {
    while (size > 0 && ids[head] < 0) {
      head = next(head);
      size--;
    }
  }

  private void trimTail() {
    while (size > 0 && ids[slot(size - 1)] < 0) {
      size--;
    }
  }

  private int slot(int index) {
    int s = head + index;
    return s >= ids.length ? s - ids.length : s;
  }

  private int next(int s) {
    return s + 1 == ids.length ? 0 : s + 1;
  }
}

package io.sluice.core.queue;

import java.util.Arrays;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A binary min-heap whose elements remember their own slot, so removal of any element is O(log n)
 * without a side map. Subclasses define the order and where the slot index is stored. The backing
 * array shrinks when it is mostly empty, so a burst does not pin memory.
 */
abstract class IndexedHeap<E> {
  private static final int MIN_CAPACITY = 2;

  private Object[] elements;
  private int size;

  IndexedHeap(int initialCapacity) {
    elements = new Object[Math.max(MIN_CAPACITY, initialCapacity)];
  }

  /** True when {@code a} must come out before {@code b}. */
  abstract boolean before(E a, E b);

  /** Stores the slot of {@code e} in {@code e} ({@code -1} when removed). */
  abstract void slot(E e, int index);

  final int size() {
    return size;
  }

  @SuppressWarnings("unchecked")
  final @Nullable E peek() {
    return size == 0 ? null : (E) elements[0];
  }

  /** The first element of a heap the caller knows is not empty. */
  final E head() {
    return Objects.requireNonNull(peek(), "empty heap");
  }

  @SuppressWarnings("unchecked")
  final E at(int index) {
    return (E) elements[index];
  }

  final void add(E e) {
    if (size == elements.length) {
      elements = Arrays.copyOf(elements, size * 2);
    }
    elements[size] = e;
    slot(e, size);
    siftUp(size++);
  }

  /** Removes the element at {@code index}. */
  @SuppressWarnings("unchecked")
  final E removeAt(int index) {
    E removed = (E) elements[index];
    int last = --size;
    if (index != last) {
      E moved = (E) elements[last];
      elements[index] = moved;
      slot(moved, index);
      elements[last] = null;
      siftDown(index);
      if (elements[index] == moved) {
        siftUp(index);
      }
    } else {
      elements[last] = null;
    }
    slot(removed, -1);
    if (elements.length > 16 && size < elements.length / 4) {
      elements = Arrays.copyOf(elements, elements.length / 2);
    }
    return removed;
  }

  /** Restores order after the key of the element at {@code index} changed. */
  @SuppressWarnings("unchecked")
  final void changed(int index) {
    E e = (E) elements[index];
    siftDown(index);
    if (elements[index] == e) {
      siftUp(index);
    }
  }

  /** Removes everything (slots are not reset; callers discard the elements). */
  final void clear() {
    Arrays.fill(elements, 0, size, null);
    size = 0;
    if (elements.length > 16) {
      elements = new Object[MIN_CAPACITY];
    }
  }

  @SuppressWarnings("unchecked")
  private void siftUp(int index) {
    E e = (E) elements[index];
    while (index > 0) {
      int parent = (index - 1) >>> 1;
      E p = (E) elements[parent];
      if (!before(e, p)) {
        break;
      }
      elements[index] = p;
      slot(p, index);
      index = parent;
    }
    elements[index] = e;
    slot(e, index);
  }

  @SuppressWarnings("unchecked")
  private void siftDown(int index) {
    E e = (E) elements[index];
    int half = size >>> 1;
    while (index < half) {
      int child = 2 * index + 1;
      E c = (E) elements[child];
      int right = child + 1;
      if (right < size && before((E) elements[right], c)) {
        child = right;
        c = (E) elements[child];
      }
      if (!before(c, e)) {
        break;
      }
      elements[index] = c;
      slot(c, index);
      index = child;
    }
    elements[index] = e;
    slot(e, index);
  }
}

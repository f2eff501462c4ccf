package io.sluice.bench;

import io.grpc.netty.shaded.io.netty.buffer.ByteBuf;
import io.grpc.netty.shaded.io.netty.buffer.ByteBufAllocator;
import io.grpc.netty.shaded.io.netty.buffer.CompositeByteBuf;
import io.grpc.netty.shaded.io.netty.util.concurrent.FastThreadLocalThread;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * A {@link ByteBufAllocator} that counts each allocation by its caller (the first frame outside
 * Netty's buffer and allocator classes), whether the thread is a Netty event loop, and the size
 * asked for, then hands it to the allocator it wraps. For {@link AllocCounts} only: it walks the
 * stack on every allocation.
 */
final class CountingAllocator implements ByteBufAllocator {
  private final ByteBufAllocator inner;
  private final Map<String, LongAdder> counts = new ConcurrentHashMap<>();
  private volatile boolean counting;

  CountingAllocator(ByteBufAllocator inner) {
    this.inner = inner;
  }

  /** Starts counting from zero. */
  void start() {
    counts.clear();
    counting = true;
  }

  /** The counts since {@link #start}, by caller, sorted. */
  Map<String, Long> stop() {
    counting = false;
    Map<String, Long> out = new TreeMap<>();
    counts.forEach((k, v) -> out.put(k, v.sum()));
    return out;
  }

  private void count(String kind, int capacity) {
    if (!counting) {
      return;
    }
    String caller =
        StackWalker.getInstance()
            .walk(
                s ->
                    s.map(f -> f.getClassName() + "." + f.getMethodName())
                        .filter(
                            n ->
                                !n.startsWith("io.grpc.netty.shaded.io.netty.buffer.")
                                    && !n.startsWith("io.sluice.bench.CountingAllocator")
                                    && !n.contains("RecvByteBufAllocator")
                                    && !n.contains("RecvByteAllocatorHandle"))
                        .findFirst()
                        .orElse("?"));
    String where = Thread.currentThread() instanceof FastThreadLocalThread ? "loop" : "other";
    String key = where + " " + kind + " " + unshaded(caller) + " ~" + bucket(capacity);
    counts.computeIfAbsent(key, k -> new LongAdder()).increment();
  }

  /** {@code io.grpc.netty.shaded.io.netty.X} as {@code netty.X}, grpc's own as {@code grpc.X}. */
  private static String unshaded(String name) {
    return name.replace("io.grpc.netty.shaded.io.", "");
  }

  private static String bucket(int capacity) {
    return capacity < 0 ? "default" : Integer.toString(capacity);
  }

  @Override
  public ByteBuf buffer() {
    count("buffer", -1);
    return inner.buffer();
  }

  @Override
  public ByteBuf buffer(int initialCapacity) {
    count("buffer", initialCapacity);
    return inner.buffer(initialCapacity);
  }

  @Override
  public ByteBuf buffer(int initialCapacity, int maxCapacity) {
    count("buffer", initialCapacity);
    return inner.buffer(initialCapacity, maxCapacity);
  }

  @Override
  public ByteBuf ioBuffer() {
    count("io", -1);
    return inner.ioBuffer();
  }

  @Override
  public ByteBuf ioBuffer(int initialCapacity) {
    count("io", initialCapacity);
    return inner.ioBuffer(initialCapacity);
  }

  @Override
  public ByteBuf ioBuffer(int initialCapacity, int maxCapacity) {
    count("io", initialCapacity);
    return inner.ioBuffer(initialCapacity, maxCapacity);
  }

  @Override
  public ByteBuf heapBuffer() {
    count("heap", -1);
    return inner.heapBuffer();
  }

  @Override
  public ByteBuf heapBuffer(int initialCapacity) {
    count("heap", initialCapacity);
    return inner.heapBuffer(initialCapacity);
  }

  @Override
  public ByteBuf heapBuffer(int initialCapacity, int maxCapacity) {
    count("heap", initialCapacity);
    return inner.heapBuffer(initialCapacity, maxCapacity);
  }

  @Override
  public ByteBuf directBuffer() {
    count("direct", -1);
    return inner.directBuffer();
  }

  @Override
  public ByteBuf directBuffer(int initialCapacity) {
    count("direct", initialCapacity);
    return inner.directBuffer(initialCapacity);
  }

  @Override
  public ByteBuf directBuffer(int initialCapacity, int maxCapacity) {
    count("direct", initialCapacity);
    return inner.directBuffer(initialCapacity, maxCapacity);
  }

  @Override
  public CompositeByteBuf compositeBuffer() {
    count("composite", -1);
    return inner.compositeBuffer();
  }

  @Override
  public CompositeByteBuf compositeBuffer(int maxNumComponents) {
    count("composite", -1);
    return inner.compositeBuffer(maxNumComponents);
  }

  @Override
  public CompositeByteBuf compositeHeapBuffer() {
    count("composite", -1);
    return inner.compositeHeapBuffer();
  }

  @Override
  public CompositeByteBuf compositeHeapBuffer(int maxNumComponents) {
    count("composite", -1);
    return inner.compositeHeapBuffer(maxNumComponents);
  }

  @Override
  public CompositeByteBuf compositeDirectBuffer() {
    count("composite", -1);
    return inner.compositeDirectBuffer();
  }

  @Override
  public CompositeByteBuf compositeDirectBuffer(int maxNumComponents) {
    count("composite", -1);
    return inner.compositeDirectBuffer(maxNumComponents);
  }

  @Override
  public boolean isDirectBufferPooled() {
    return inner.isDirectBufferPooled();
  }

  @Override
  public int calculateNewCapacity(int minNewCapacity, int maxCapacity) {
    return inner.calculateNewCapacity(minNewCapacity, maxCapacity);
  }
}

package io.sluice.bench;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.buffer.PoolArenaMetric;
import io.grpc.netty.shaded.io.netty.buffer.PooledByteBufAllocator;
import io.grpc.netty.shaded.io.netty.channel.Channel;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioSocketChannel;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Counts, per stream, what grpc's pooled allocator does on a target's server ({@code sluice},
 * {@code noop-answers}, {@code noop}, ...) driven as the floor drives it (4 channels × 32 streams
 * in flight): every allocation by its caller, thread and size ({@link CountingAllocator} put on the
 * server's connections), and the arena's allocations and frees, i.e. the thread-cache misses and
 * the frees the thread cache did not keep. Counts, not timings: a loaded machine reads the same.
 * The generator's channels have an event loop and an allocator of their own, so grpc's shared
 * allocator counts only the server's buffers.
 *
 * <pre>
 * java -cp sluice-bench.jar io.sluice.bench.AllocCounts llm 20000 sluice,noop-answers
 * </pre>
 */
final class AllocCounts {
  private AllocCounts() {}

  /** Streams run before counting (JIT, thread caches filled, learned estimates settled). */
  static final int WARM = 4000;

  /** The arena counters of grpc's allocator, summed over its arenas. */
  record Arenas(
      long smallAllocs,
      long normalAllocs,
      long hugeAllocs,
      long smallFrees,
      long normalFrees,
      long hugeFrees,
      int threadCaches) {
    static Arenas of(PooledByteBufAllocator a) {
      long[] c = new long[6];
      for (List<PoolArenaMetric> arenas :
          List.of(a.metric().directArenas(), a.metric().heapArenas())) {
        for (PoolArenaMetric m : arenas) {
          c[0] += m.numSmallAllocations();
          c[1] += m.numNormalAllocations();
          c[2] += m.numHugeAllocations();
          c[3] += m.numSmallDeallocations();
          c[4] += m.numNormalDeallocations();
          c[5] += m.numHugeDeallocations();
        }
      }
      return new Arenas(c[0], c[1], c[2], c[3], c[4], c[5], a.metric().numThreadLocalCaches());
    }

    String perStream(Arenas before, int streams) {
      return String.format(
          Locale.ROOT,
          "arena allocations (thread-cache misses) small %.3f normal %.3f huge %.3f;"
              + " arena frees small %.3f normal %.3f huge %.3f; thread caches %d",
          (smallAllocs - before.smallAllocs) / (double) streams,
          (normalAllocs - before.normalAllocs) / (double) streams,
          (hugeAllocs - before.hugeAllocs) / (double) streams,
          (smallFrees - before.smallFrees) / (double) streams,
          (normalFrees - before.normalFrees) / (double) streams,
          (hugeFrees - before.hugeFrees) / (double) streams,
          threadCaches);
    }
  }

  /**
   * One target's counts.
   *
   * @param ok streams that ended as the workload expects
   * @param arenas the arena counters' change, per stream
   * @param byCaller allocations by "thread kind caller ~size", over all streams
   */
  record Result(String target, int streams, int ok, String arenas, Map<String, Long> byCaller) {
    void print(PrintStream out, String shape) {
      out.printf(
          Locale.ROOT, "%s %s (%d streams, %d ok): %s%n", shape, target, streams, ok, arenas);
      long total = 0;
      for (Map.Entry<String, Long> e : byCaller.entrySet()) {
        total += e.getValue();
        if (e.getValue() * 100L >= streams) { // at least one in 100 streams
          out.printf(Locale.ROOT, "  %8.3f %s%n", e.getValue() / (double) streams, e.getKey());
        }
      }
      out.printf(Locale.ROOT, "  %8.3f allocations per stream in all%n", total / (double) streams);
    }
  }

  /** {@code [SHAPE [STREAMS [TARGETS [CHANNELS [IN_FLIGHT_PER_CHANNEL]]]]]}. */
  public static void main(String[] args) throws Exception {
    FloorCalls shape = FloorCalls.parse(args.length > 0 ? args[0] : "llm");
    int streams = args.length > 1 ? Integer.parseInt(args[1]) : 20_000;
    String targets = args.length > 2 ? args[2] : "sluice,noop-answers";
    int channels = args.length > 3 ? Integer.parseInt(args[3]) : 4;
    int inFlight = args.length > 4 ? Integer.parseInt(args[4]) : 32;
    for (String target : targets.split(",")) {
      count(shape, target, WARM, streams, channels, channels * inFlight)
          .print(System.out, shape.label());
    }
    System.exit(0); // grpc's shared event loops are not daemons
  }

  /** Starts {@code target}, runs {@code warm} streams, then counts {@code streams} of them. */
  static Result count(
      FloorCalls shape, String target, int warm, int streams, int channels, int inFlight)
      throws Exception {
    PooledByteBufAllocator grpc = grpcAllocator();
    NioEventLoopGroup loops = new NioEventLoopGroup(2);
    PooledByteBufAllocator own = new PooledByteBufAllocator(true);
    List<ManagedChannel> chs = new ArrayList<>();
    try (AutoCloseable server = new Floor().start(target, 0)) {
      int port = port(server);
      for (int c = 0; c < channels; c++) {
        chs.add(
            NettyChannelBuilder.forAddress("127.0.0.1", port)
                .eventLoopGroup(loops)
                .channelType(NioSocketChannel.class)
                .withOption(ChannelOption.ALLOCATOR, own)
                .usePlaintext()
                .directExecutor()
                .flowControlWindow(1 << 20)
                .build());
      }
      drive(chs, shape, Math.max(warm, inFlight), inFlight); // every connection open
      CountingAllocator counting = new CountingAllocator(grpc);
      countOn(grpcServer(server), counting);
      drive(chs, shape, warm, inFlight);
      Arenas before = Arenas.of(grpc);
      counting.start();
      int ok = drive(chs, shape, streams, inFlight);
      Map<String, Long> byCaller = counting.stop();
      String arenas = Arenas.of(grpc).perStream(before, streams);
      return new Result(target, streams, ok, arenas, byCaller);
    } finally {
      for (ManagedChannel c : chs) {
        c.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
      loops.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }
  }

  /** Runs {@code n} calls of {@code shape} over {@code chs}, {@code inFlight} at once. */
  static int drive(List<ManagedChannel> chs, FloorCalls shape, int n, int inFlight)
      throws InterruptedException {
    var call = shape.call(false);
    Semaphore slots = new Semaphore(inFlight);
    AtomicInteger ok = new AtomicInteger();
    for (int i = 0; i < n; i++) {
      slots.acquire();
      call.accept(
          chs.get(i % chs.size()),
          good -> {
            if (good) {
              ok.incrementAndGet();
            }
            slots.release();
          });
    }
    slots.acquire(inFlight);
    return ok.get();
  }

  /** grpc's own allocator (its Netty servers' and channels'), read by reflection. */
  static PooledByteBufAllocator grpcAllocator() throws ReflectiveOperationException {
    Class<?> utils = Class.forName("io.grpc.netty.shaded.io.grpc.netty.Utils");
    var get = utils.getMethod("getByteBufAllocator", boolean.class);
    get.setAccessible(true);
    return (PooledByteBufAllocator) get.invoke(null, false);
  }

  /**
   * Puts {@code counting} on each open connection of {@code server} (grpc's ServerImpl and
   * NettyServerTransport, by reflection): its streams opened from now on write through it, its
   * reads allocate through it.
   */
  private static void countOn(io.grpc.Server server, CountingAllocator counting)
      throws ReflectiveOperationException {
    var transports = server.getClass().getDeclaredField("transports");
    transports.setAccessible(true);
    for (Object t : List.copyOf((Set<?>) transports.get(server))) {
      var channel = t.getClass().getDeclaredField("channel");
      channel.setAccessible(true);
      ((Channel) channel.get(t)).config().setAllocator(counting);
    }
  }

  private static io.grpc.Server grpcServer(AutoCloseable server)
      throws ReflectiveOperationException {
    if (server instanceof FloorServers.Sluice s) {
      var grpc = s.server.getClass().getDeclaredField("grpc");
      grpc.setAccessible(true);
      return (io.grpc.Server) grpc.get(s.server);
    }
    if (server instanceof FloorReplies.Server r) {
      return r.server;
    }
    if (server instanceof FloorServers.NoOp n) {
      return n.server;
    }
    throw new IllegalArgumentException("not a grpc server: " + server);
  }

  private static int port(AutoCloseable server) throws ReflectiveOperationException {
    return server instanceof FloorServers.Sluice s
        ? s.server.grpcPort()
        : grpcServer(server).getPort();
  }
}

package io.sluice.transport;

import io.grpc.internal.TimeProvider;
import io.grpc.internal.TransportTracer;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.lang.reflect.Method;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * Gives grpc-netty's per-connection {@code TransportTracer} a coarse wall clock instead of {@code
 * Instant.now()}.
 *
 * <p>Why: grpc stamps the time of the last stream started, message sent and message received on
 * every connection for channelz (three wall-clock reads per one-shot ext_proc stream, {@code
 * Instant.now()} each, about 0.25 µs of server CPU per stream on the project's 2-core floor: the
 * size of what separated Sluice from the no-op there; docs/benchmarks.md). Sluice does not serve
 * channelz, so nothing reads these stamps; the counts grpc keeps beside them are unchanged. The
 * clock given here is the meter registry's, refreshed by the process's ticker at most a millisecond
 * behind the system clock ({@code MeterClock}): a stamp is never more than that late.
 *
 * <p>How: {@code NettyServerBuilder.setTransportTracerFactory} is package-private in grpc-netty
 * (its tests' hook); it is called once per server build by reflection, with grpc's public {@code
 * TransportTracer.Factory(TimeProvider)}. If a grpc version lacks it, the builder keeps grpc's own
 * tracer and {@link #install} says so (false): nothing else changes. {@code
 * CoarseTransportClockTest} checks it takes hold with the grpc version in the parent pom.
 */
public final class CoarseTransportClock {
  private static final @Nullable Method SETTER = setter();

  private CoarseTransportClock() {}

  /**
   * Installs on {@code builder} a transport tracer whose clock is {@code wallMillis} (epoch
   * milliseconds). Returns whether it took hold.
   */
  public static boolean install(NettyServerBuilder builder, LongSupplier wallMillis) {
    Method m = SETTER;
    if (m == null) {
      return false;
    }
    TimeProvider coarse = () -> wallMillis.getAsLong() * 1_000_000L;
    try {
      m.invoke(builder, new TransportTracer.Factory(coarse));
      return true;
    } catch (ReflectiveOperationException | RuntimeException e) {
      return false;
    }
  }

  private static @Nullable Method setter() {
    try {
      Method m =
          NettyServerBuilder.class.getDeclaredMethod(
              "setTransportTracerFactory", TransportTracer.Factory.class);
      m.setAccessible(true);
      return m;
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null; // another grpc version: its own tracer stays
    }
  }
}

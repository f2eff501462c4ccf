package io.sluice.transport;

import io.grpc.netty.shaded.io.netty.util.ResourceLeakDetector;
import java.util.function.UnaryOperator;

/**
 * Netty's buffer-leak sampling in Sluice's server process: off unless the operator asks for it.
 *
 * <p>At its default level ({@code SIMPLE}) Netty wraps one pooled buffer in 128 in a tracker whose
 * creation and release each fill in a stack trace of the event loop; on the ext_proc path that is
 * about 2 µs of server CPU per LLM-shaped stream (a body, an answer, both directions' frames) and
 * about 1.2 µs per one-shot stream (docs/benchmarks/request-path-history.md, "Netty's leak
 * sampling"). A leak it would report shows up in Sluice as pooled direct memory that grows without
 * bound, which the heap/direct-memory gauges already show. An operator who wants the sampling back
 * sets Netty's own property for grpc's shaded copy, {@code
 * -Dio.grpc.netty.shaded.io.netty.leakDetection.level=simple} (or {@code advanced}, {@code
 * paranoid}); then this class leaves the level alone.
 */
public final class LeakSampling {
  /** The property grpc-netty-shaded's Netty reads for its level. */
  public static final String LEVEL_PROPERTY = "io.grpc.netty.shaded.io.netty.leakDetection.level";

  /** Netty's older spelling of the same property, still read by it. */
  static final String LEGACY_PROPERTY = "io.grpc.netty.shaded.io.netty.leakDetectionLevel";

  private LeakSampling() {}

  /** {@link #apply(UnaryOperator)} on the JVM's system properties. */
  public static ResourceLeakDetector.Level apply() {
    return apply(System::getProperty);
  }

  /**
   * Turns the sampling off when neither property is set in {@code properties}; otherwise leaves
   * Netty's level as Netty read it. Returns the level in force.
   */
  public static ResourceLeakDetector.Level apply(UnaryOperator<String> properties) {
    if (properties.apply(LEVEL_PROPERTY) == null && properties.apply(LEGACY_PROPERTY) == null) {
      ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.DISABLED);
    }
    return ResourceLeakDetector.getLevel();
  }
}

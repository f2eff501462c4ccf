package io.sluice.bootstrap;

import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.PoolState;
import java.time.Duration;
import java.util.function.DoubleSupplier;

/**
 * The admission controller a server runs for a policy: the policy's pools and classes, a
 * request-rate window of {@link #RATE_WINDOW}, no release listener. The live server ({@link
 * ProcessServices}) and every isolated runtime ({@link IsolatedRuntime}: the warm-up, a replay)
 * build theirs here, so the warm-up drives the controller the server runs; tests and benchmarks
 * that want the server's controller for a policy build it here too.
 */
public final class Controllers {
  /** The window of the controller's request-rate estimate. */
  public static final Duration RATE_WINDOW = Duration.ofSeconds(10);

  private Controllers() {}

  /**
   * The controller for {@code config}'s pools and classes; {@code uniform} draws in [0, 1) for its
   * jitter (the live server's {@code Math::random}, a warm-up's or a test's own).
   */
  public static AdmissionController forPolicy(SluiceConfig config, DoubleSupplier uniform) {
    return new AdmissionController(
        config.pools().values(),
        config.classes().values(),
        RATE_WINDOW,
        PoolState.ReleaseListener.NONE,
        uniform);
  }
}

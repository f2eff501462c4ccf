package io.sluice.core.intake;

import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * What happens to a request of a class its pool cannot start in time ({@code intake.whenLate}): the
 * pool refuses it {@code deadline_unreachable} (its predicted wait is past its deadline or its
 * class's {@code maxQueueWait}), {@code queue_full}, or, after it waited, {@code queue_timeout};
 * one the front end cannot hold {@code pool_saturated} or {@code class_share}.
 */
public enum WhenLate {
  /** The refusal stands (the default). */
  REFUSE,
  /**
   * It is written to the durable queue and answered with the queued object, as a background request
   * is; the refusal stands when the store does not acknowledge it ({@link LateIntake}).
   */
  ACCEPT;

  /** The config's spelling ({@code refuse}, {@code accept}). */
  public String code() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** The value spelled {@code code}, or null. */
  public static @Nullable WhenLate of(String code) {
    for (WhenLate w : values()) {
      if (w.code().equals(code)) {
        return w;
      }
    }
    return null;
  }
}

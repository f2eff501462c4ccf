package io.sluice.core.archfixture;

/** Breaks the core clock rule on purpose (test sources only; see LayerRulesBiteTest). */
public final class ReadsClocks {
  long instant() {
    return java.time.Instant.now().toEpochMilli();
  }

  long utc() {
    return java.time.Clock.systemUTC().millis();
  }

  long zone() {
    return java.time.Clock.systemDefaultZone().millis();
  }

  long millis() {
    return System.currentTimeMillis();
  }

  long nanos() {
    return System.nanoTime();
  }
}

package io.sluice.core.intake;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The measured drain of a job queue: none shown until a span of samples while jobs waited. */
class QueueDrainTest {
  private static final long T0 = 1_800_000_000_000L;

  @Test
  void rate_isTheWorkThatLeftPerSecond_sinceJobsWaited_afterTheLeastSpan() {
    QueueDrain d = new QueueDrain();
    assertThat(d.workPerSecond("p", T0)).isNaN(); // nothing seen
    d.record("p", T0, 1_000, false); // nothing waited: no evidence of a drain
    assertThat(d.workPerSecond("p", T0)).isNaN();
    d.record("p", T0 + 1_000, 1_000, true);
    d.record("p", T0 + 2_000, 1_500, true);
    assertThat(d.workPerSecond("p", T0 + 2_000)).isZero(); // 1 s since jobs waited: none shown
    d.record("p", T0 + 5_000, 3_000, true);
    assertThat(d.workPerSecond("p", T0 + 5_000)).isEqualTo(500.0); // 2,000 units in 4 s
    assertThat(d.workPerSecond("other", T0 + 5_000)).isNaN();
  }

  @Test
  void rate_nothingLeftWhileJobsWaited_isZero_andLooksBackThirtySeconds() {
    QueueDrain d = new QueueDrain();
    d.record("p", T0, 0, true);
    d.record("p", T0 + 10_000, 0, true);
    assertThat(d.workPerSecond("p", T0 + 10_000)).isZero();
    d.record("p", T0 + 40_000, 9_000, true);
    d.record("p", T0 + 50_000, 12_000, true);
    // the sample at T0 is older than the lookback: from T0 + 40 s, 3,000 units in 10 s
    assertThat(d.workPerSecond("p", T0 + 50_000)).isEqualTo(300.0);
  }

  @Test
  void bounded_theOldestQueueGoes() {
    QueueDrain d = new QueueDrain();
    d.record("first", T0, 0, true);
    d.record("first", T0 + 5_000, 500, true);
    for (int i = 0; i < QueueDrain.MAX_QUEUES; i++) {
      d.record("q" + i, T0, 0, true);
    }
    assertThat(d.workPerSecond("first", T0 + 5_000)).isNaN();
  }
}

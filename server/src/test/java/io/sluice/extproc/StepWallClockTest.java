package io.sluice.extproc;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link SerialExecutor#stepMillisOr}: one wall-clock read per step that runs at once, shared by
 * whatever asks in it; a new step, a task that is not a step, and a step that waited behind another
 * read their own.
 */
class StepWallClockTest {

  static Stream<Arguments> asks() {
    return Stream.of(Arguments.of(1, 3), Arguments.of(2, 1), Arguments.of(5, 4));
  }

  /** {@code steps} steps at once, {@code asks} asks each: one read per step, the same value. */
  @ParameterizedTest
  @MethodSource("asks")
  void aStepRunAtOnce_readsTheWallClockOnce(int steps, int asks) {
    var clock = stepping(7);
    SerialExecutor serial = new SerialExecutor(t -> {});
    List<List<Long>> seen = new ArrayList<>();
    for (int k = 0; k < steps; k++) {
      serial.execute(
          (SerialExecutor e, List<List<Long>> out, long nanos) -> {
            List<Long> mine = new ArrayList<>();
            for (int i = 0; i < asks; i++) {
              mine.add(e.stepMillisOr(clock));
            }
            out.add(mine);
          },
          serial,
          seen,
          k);
    }
    assertThat(clock.reads).hasValue(steps);
    for (int k = 0; k < steps; k++) {
      assertThat(seen.get(k)).hasSize(asks).containsOnly(7L * (k + 1));
    }
  }

  /** A plain task, and a step queued behind it, read the clock at each ask (other instants). */
  @ParameterizedTest
  @MethodSource("asks")
  void aTaskOrAStepThatWaited_readsAtEachAsk(int tasks, int asks) {
    var clock = stepping(3);
    SerialExecutor serial = new SerialExecutor(t -> {});
    List<Long> seen = new ArrayList<>();
    serial.execute(
        () -> {
          for (int k = 0; k < tasks; k++) { // queued behind this one: run after it, not at once
            serial.execute(
                (SerialExecutor e, List<Long> out, long nanos) -> {
                  for (int i = 0; i < asks; i++) {
                    out.add(e.stepMillisOr(clock));
                  }
                },
                serial,
                seen,
                k);
          }
          for (int i = 0; i < asks; i++) {
            seen.add(serial.stepMillisOr(clock));
          }
        });
    assertThat(clock.reads).hasValue((tasks + 1) * asks);
    assertThat(seen).doesNotHaveDuplicates();
  }

  /** A wall clock from the epoch that moves {@code step} ms at each read, and counts them. */
  private static ClockReadsPerStreamTest.CountingClock stepping(long step) {
    var clock = new ClockReadsPerStreamTest.CountingClock(Instant.EPOCH);
    clock.stepMillis = step;
    return clock;
  }
}

package io.sluice.harness;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.upstream.SimulatedLlmUpstream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Smoke tests: short runs against the no-admission rig; counts must add up (no timing). */
class LoadGeneratorTest {
  private static final SimulatedLlmUpstream.Settings FAST =
      new SimulatedLlmUpstream.Settings(4, Duration.ZERO, Duration.ofMillis(1), 8, 64, 4);

  private static Workload workload(int maxRetries, double cancelFraction, Duration deadline) {
    return new Workload(
        List.of(
            new Workload.RequestClass(
                "chat",
                "interactive",
                "/v1/chat/completions",
                1,
                20,
                40,
                5,
                10,
                deadline,
                Duration.ofSeconds(1)),
            new Workload.RequestClass(
                "batch",
                "batch",
                "/v1/chat/completions",
                1,
                20,
                40,
                5,
                10,
                deadline,
                Duration.ofSeconds(5))),
        List.of(new Workload.Tenant("a", 1), new Workload.Tenant("b", 3)),
        List.of(
            new Workload.Phase("low", Duration.ofMillis(500), 20),
            new Workload.Phase("high", Duration.ofMillis(500), 40)),
        cancelFraction,
        Duration.ofMillis(1),
        Duration.ofMillis(50),
        maxRetries,
        Duration.ofSeconds(5),
        1);
  }

  @Test
  void run_noAdmission_everyArrivalIsAccountedFor() throws InterruptedException {
    List<LoadGenerator.Progress> progress = new ArrayList<>();
    RunReport r;
    try (Rig rig = Rig.noAdmission("direct", FAST)) {
      r = new LoadGenerator(workload(0, 0, Duration.ofSeconds(5))).run(rig, progress::add);
    }
    assertThat(r.offered()).isPositive();
    assertThat(r.accountedFor()).isEqualTo(r.offered());
    assertThat(r.completed()).isPositive();
    assertThat(r.byClass().values().stream().mapToLong(RunReport.Split::offered).sum())
        .isEqualTo(r.offered());
    assertThat(r.byTenant().values().stream().mapToLong(RunReport.Split::completed).sum())
        .isEqualTo(r.completed());
    assertThat(r.timeline().stream().mapToLong(RunReport.Second::offered).sum())
        .isEqualTo(r.offered());
    assertThat(r.tokensSpent()).isGreaterThanOrEqualTo(r.usefulTokens());
    assertThat(r.usefulTokens()).isPositive();
    assertThat(r.attempts()).isEqualTo(r.offered());
  }

  @Test
  void run_throttlingUpstream_refusalsCarryRetryAfterAndRetriesAreBounded()
      throws InterruptedException {
    RunReport r;
    try (Rig rig = Rig.noAdmission("throttled", FAST)) {
      rig.upstream().throttle(429, Duration.ofSeconds(1));
      r = new LoadGenerator(workload(1, 0, Duration.ofSeconds(3))).run(rig, p -> {});
    }
    assertThat(r.completed()).isZero();
    assertThat(r.accountedFor()).isEqualTo(r.offered());
    assertThat(r.rejectedFinal()).containsOnlyKeys("upstream_429");
    assertThat(r.refusalsWithoutRetryAfter()).isZero();
    assertThat(r.refusalsWithRetryAfter()).isEqualTo(r.attempts());
    assertThat(r.retries()).isEqualTo(r.offered()); // one retry each, then refused for good
    assertThat(r.attempts()).isEqualTo(r.offered() + r.retries());
  }

  @Test
  void run_clientsCancel_cancellationsAreCounted() throws InterruptedException {
    RunReport r;
    SimulatedLlmUpstream.Settings slow =
        new SimulatedLlmUpstream.Settings(2, Duration.ZERO, Duration.ofMillis(20), 8, 64, 4);
    try (Rig rig = Rig.noAdmission("cancel", slow)) {
      r = new LoadGenerator(workload(0, 1.0, Duration.ofSeconds(5))).run(rig, p -> {});
    }
    assertThat(r.cancelled()).isPositive();
    assertThat(r.accountedFor()).isEqualTo(r.offered());
  }
}

package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.harness.LoadGenerator;
import io.sluice.harness.Rig;
import io.sluice.harness.RunReport;
import io.sluice.harness.Workload;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The demo's live counts are of requests, not attempts: a request refused, retried and refused
 * again is one refusal (and two refused attempts), so refused never exceeds offered.
 */
class ProgressCountingTest {

  @Test
  void progress_everyRequestRefusedAndRetried_countsEachRequestOnce() throws Exception {
    Workload.RequestClass chat =
        Workload.RequestClass.of(
            "chat",
            null,
            "/v1/chat/completions",
            1,
            100,
            200,
            10,
            20,
            Duration.ofSeconds(8),
            Duration.ofSeconds(2));
    Workload w =
        Workload.of(
            List.of(chat),
            List.of(new Workload.Tenant("acme", 1)),
            List.of(new Workload.Phase("p", Duration.ofMillis(1500), 20)),
            0,
            Duration.ZERO,
            Duration.ZERO,
            1, // one retry after Retry-After
            Duration.ofSeconds(6),
            7);
    List<LoadGenerator.Progress> progress = new ArrayList<>();
    RunReport r;
    // a generous emulated message timeout: the refusals, not the machine's speed, are under test
    try (SluiceServer server = SluiceServer.start(ConfigLoader.parse(Floor.REJECT_POLICY));
        Rig rig =
            Rig.extProc(
                "sluice",
                "127.0.0.1:" + server.grpcPort(),
                Rig.benchFilter().messageTimeout(Duration.ofSeconds(10)).build(),
                Scenario.UPSTREAM,
                Map.of())) {
      r = new LoadGenerator(w).run(rig, progress::add);
    }
    List<String> lines =
        progress.stream().map(p -> Comparison.progressLine(p, Map.of(), "sluice")).toList();
    assertThat(r.outcomes().offered()).isPositive();
    assertThat(r.outcomes().completed()).isZero();
    assertThat(r.outcomes().rejectedFinalTotal()).isEqualTo(r.outcomes().offered());
    assertThat(r.outcomes().retries()).isPositive(); // Retry-After (1 s) is inside the 8 s deadline
    long refusedAttempts =
        r.refusals().byReason().values().stream().mapToLong(Long::longValue).sum();
    assertThat(refusedAttempts)
        .isEqualTo(r.outcomes().attempts())
        .isGreaterThan(r.outcomes().offered());

    assertThat(lines).isNotEmpty();
    for (String line : lines) {
      long offered = number(line, "offered");
      long admitted = number(line, "admitted");
      long refused = number(line, "+ refused");
      long waiting = number(line, "waiting");
      long unserved = number(line, "unserved");
      assertThat(admitted).as(line).isZero();
      assertThat(waiting).as(line).isNotNegative();
      assertThat(refused).as(line).isLessThanOrEqualTo(offered);
      assertThat(admitted + refused + waiting + unserved).as(line).isEqualTo(offered);
      assertThat(number(line, "refused attempts")).as(line).isGreaterThanOrEqualTo(refused);
    }
  }

  @Test
  void progressLine_showsTheRequestIdentityAndRefusedAttemptsApart() {
    var p = new LoadGenerator.Progress(7, 100, 60, 30, 4, 6, 55, 52, 16);
    assertThat(Comparison.progressLine(p, Map.of("sluice", p), "sluice"))
        .isEqualTo(
            "[  7s] sluice: offered   100 = admitted    60 + refused    30 + waiting    6 +"
                + " unserved    4 | goodput    55 | refused attempts    52 | upstream active  16");
  }

  /** The number after {@code label} in a live line. */
  private static long number(String line, String label) {
    int at = line.indexOf(label + " ");
    assertThat(at).as(label + " in " + line).isNotNegative();
    String rest = line.substring(at + label.length()).stripLeading();
    return Long.parseLong(rest.split("\\s+")[0]);
  }
}

package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.config.ConfigLoader;
import io.sluice.config.IntakeSection;
import io.sluice.config.SluiceConfig;
import io.sluice.core.intake.IntakePolicy;
import io.sluice.harness.LoopbackRelay;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The intake-burst bench's wiring and figures (no run: that needs Redis and two minutes). */
class IntakeBurstTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void policy_parses_redisOfTheRun_intakeOnBatch_dispatchToTheRelay() {
    SluiceConfig c =
        ConfigLoader.parse(
            IntakeBurst.policy(
                "127.0.0.1:6379", "sluice_bench_x_", "http://127.0.0.1:4242", false));
    assertThat(c.quotas().keyPrefix()).isEqualTo("sluice_bench_x_");
    assertThat(c.rateLimit().env()).containsEntry("BACKEND_TYPE", "redis");
    IntakePolicy p = c.section(IntakeSection.SECTION);
    assertThat(p.enabled()).isTrue();
    assertThat(p.classes()).containsExactly("batch");
    assertThat(p.dispatch().url()).isEqualTo("http://127.0.0.1:4242");
    assertThat(p.dispatch().headers()).containsEntry("x-sluice-tenant", "tenant");
    assertThat(p.dispatch().lease()).isGreaterThan(p.dispatch().timeout());
    assertThat(p.dispatch().timeout()).isEqualTo(Duration.ofSeconds(10));
  }

  @Test
  void lateMode_acceptsBatchLate_andItsRequestsDoNotAskForBackground() throws Exception {
    SluiceConfig c =
        ConfigLoader.parse(
            IntakeBurst.policy("127.0.0.1:6379", "sluice_bench_x_", "http://127.0.0.1:4242", true));
    assertThat(c.section(IntakeSection.SECTION).acceptsLate("batch")).isTrue();
    assertThat(c.section(IntakeSection.SECTION).acceptsLate("interactive")).isFalse();
    assertThat(JSON.readTree(IntakeBurst.jobBody(7, true)).has("background")).isFalse();
  }

  @Test
  void jobBody_isABackgroundResponsesRequest() throws Exception {
    var j = JSON.readTree(IntakeBurst.jobBody(7, false));
    assertThat(j.get("background").asBoolean()).isTrue();
    assertThat(j.get("input").asText()).contains("job 7");
  }

  @Test
  void statusOf_completedIsTheUpstreamsObject_failedCarriesItsCode() throws Exception {
    String id = "resp_0123456789abcdef0123456789abcdef";
    assertThat(IntakeBurst.statusOf(id, JSON.readTree("{\"id\":\"" + id + "\",\"choices\":[]}")))
        .isEqualTo("completed");
    assertThat(
            IntakeBurst.statusOf(
                id,
                JSON.readTree(
                    "{\"id\":\"" + id + "\",\"status\":\"failed\",\"error\":{\"code\":\"x\"}}")))
        .isEqualTo("failed (x)");
    assertThat(
            IntakeBurst.statusOf(
                id, JSON.readTree("{\"id\":\"" + id + "\",\"status\":\"queued\"}")))
        .isEqualTo("queued");
    assertThat(IntakeBurst.ended("failed (x)")).isTrue();
    assertThat(IntakeBurst.ended("in_progress")).isFalse();
  }

  @Test
  void windowError_zeroInside_negativeEarly_positiveLate() {
    IntakeBurst.Submitted s = new IntakeBurst.Submitted(0, 1_000_000);
    s.startAfter = 1_000;
    s.startBefore = 1_010;
    s.expiresAt = 4_600;
    LoopbackRelay.Job j = new LoopbackRelay.Job();
    j.firstDispatchMillis.set(1_005_500);
    assertThat(IntakeBurstReport.start(s, j).error()).isZero();
    LoopbackRelay.Job early = new LoopbackRelay.Job();
    early.firstDispatchMillis.set(998_000);
    assertThat(IntakeBurstReport.start(s, early).error()).isEqualTo(-2.0);
    LoopbackRelay.Job late = new LoopbackRelay.Job();
    late.firstDispatchMillis.set(1_013_000);
    assertThat(IntakeBurstReport.start(s, late).error()).isEqualTo(2.0);
    assertThat(IntakeBurstReport.start(s, late).open()).isFalse();
  }

  @Test
  void quantile_nearestRank() {
    assertThat(IntakeBurstReport.quantile(new double[] {3, 1, 2, 4}, 0.5)).isEqualTo(2);
    assertThat(IntakeBurstReport.quantile(new double[] {3, 1, 2, 4}, 1.0)).isEqualTo(4);
    assertThat(IntakeBurstReport.quantile(new double[0], 0.5)).isNaN();
  }

  @Test
  void outOfBounds_isAUsageError() {
    assertThat(BenchCliTest.run("intake-burst", "--duration", "2").code()).isEqualTo(2);
    assertThat(BenchCliTest.run("intake-burst", "--jobs", "0").code()).isEqualTo(2);
  }
}

package io.sluice.bootstrap;

import static io.sluice.bootstrap.AdminGet.get;
import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Meter;
import io.sluice.config.ConfigLoader;
import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Ask;
import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Permit;
import io.sluice.core.policy.Tenant;
import io.sluice.core.time.Ticker;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Hot reload as an operator meets it: a deleted file, a renamed pool, reordered classes. */
class ReloadOperatorTest {
  @TempDir Path dir;

  private static String policy(String pool, String classes) {
    return """
        server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}, reloadInterval: 1h, warmup: {enabled: false}}
        pools: {%s: {capacity: 1000}}
        classes:
        %s
        """
        .formatted(pool, classes);
  }

  private static final String INTERACTIVE_BATCH =
      "  interactive: {rank: 0, reservedShare: 0.5}\n  batch: {rank: 1, reservedShare: 0.2}\n";
  private static final String BATCH_INTERACTIVE =
      "  batch: {rank: 1, reservedShare: 0.2}\n  interactive: {rank: 0, reservedShare: 0.5}\n";

  private SluiceServer start(Path file) throws Exception {
    return SluiceServer.start(
        ConfigLoader.load(file),
        new SluiceServer.Options(file, Map.of(), Ticker.system(), Clock.systemUTC()));
  }

  private static double failures(SluiceServer s) {
    return s.registry().find("sluice.config.reloads").tag("result", "failure").counter().count();
  }

  private static double lastOk(SluiceServer s) {
    return s.registry().get("sluice.config.last_reload_success").gauge().value();
  }

  @Test
  void deletedPolicyFile_isReportedOnce_keepsTheLastGoodPolicy_andIsSeenComingBack()
      throws Exception {
    Path file = dir.resolve("sluice.yaml");
    String good = policy("gpu", INTERACTIVE_BATCH);
    Files.writeString(file, good);
    try (SluiceServer s = start(file)) {
      Files.delete(file);
      for (int i = 0; i < 5; i++) { // five housekeeping rounds
        assertThat(s.reloadIfChanged()).isFalse();
      }
      assertThat(failures(s)).isEqualTo(1.0); // one failure (and one WARN), not one per round
      assertThat(lastOk(s)).isZero();
      assertThat(s.config().pools()).containsKey("gpu");
      assertThat(get(s.adminPort(), "/readyz"))
          .startsWith("ready")
          .contains("config: last reload failed: " + file + ": cannot read (no such file);")
          .contains("serving the last good policy, checking every 1h");

      Files.writeString(file, good); // back, unchanged
      assertThat(s.reloadIfChanged()).isFalse();
      assertThat(lastOk(s)).isEqualTo(1.0);
      assertThat(get(s.adminPort(), "/readyz")).contains("config: ok");
      assertThat(failures(s)).isEqualTo(1.0);

      Files.delete(file);
      assertThat(s.reloadIfChanged()).isFalse();
      assertThat(failures(s)).isEqualTo(2.0); // gone again: a new event
      Files.writeString(file, policy("gpu2", INTERACTIVE_BATCH)); // back, changed
      assertThat(s.reloadIfChanged()).isTrue();
      assertThat(s.config().pools()).containsOnlyKeys("gpu2");
      assertThat(lastOk(s)).isEqualTo(1.0);
    }
  }

  @Test
  void renamedPool_leavesNoStaleSeries_andEveryGaugeIsRegisteredOnce() throws Exception {
    Path file = dir.resolve("sluice.yaml");
    Files.writeString(file, policy("gpu", INTERACTIVE_BATCH));
    try (SluiceServer s = start(file)) {
      // a decision counted for the old pool, as a served request leaves it
      s.runtime()
          .metrics()
          .decision("gpu", "interactive", "default", "reject", "pool_saturated", "body", 1000);
      assertThat(get(s.adminPort(), "/metrics")).contains("pool=\"gpu\"");

      Files.writeString(file, policy("gpu-b", INTERACTIVE_BATCH));
      assertThat(s.reloadIfChanged()).isTrue();
      String scrape = get(s.adminPort(), "/metrics");
      assertThat(scrape).doesNotContain("pool=\"gpu\"").contains("pool=\"gpu-b\"");
      assertThat(scrape).contains("sluice_pool_capacity{pool=\"gpu-b\"} 1000.0");

      Set<Meter.Id> ids = new HashSet<>();
      for (Meter m : s.registry().getMeters()) {
        assertThat(ids.add(m.getId())).as(m.getId().toString()).isTrue();
      }
      assertThat(s.registry().find("sluice.pool.capacity").gauges()).hasSize(1);
    }
  }

  @Test
  void reorderedClasses_gaugesFollowTheirClass() throws Exception {
    Path file = dir.resolve("sluice.yaml");
    Files.writeString(file, policy("gpu", INTERACTIVE_BATCH));
    try (SluiceServer s = start(file)) {
      var c = s.config();
      Permit p =
          ((Decision.Admit)
                  s.runtime()
                      .controller()
                      .decide(
                          new AdmissionRequest(
                              c.pools().get("gpu"),
                              c.classes().get("interactive"),
                              new Tenant("t", c.tiers().values().iterator().next()),
                              300,
                              0,
                              Long.MAX_VALUE / 2,
                              -1,
                              -1),
                          Ask.now(0)))
              .permit();
      Files.writeString(file, policy("gpu", BATCH_INTERACTIVE));
      assertThat(s.reloadIfChanged()).isTrue();
      assertThat(
              s.registry()
                  .get("sluice.pool.work.in_flight")
                  .tags("pool", "gpu", "class", "interactive")
                  .gauge()
                  .value())
          .isEqualTo(300.0);
      assertThat(
              s.registry()
                  .get("sluice.pool.work.in_flight")
                  .tags("pool", "gpu", "class", "batch")
                  .gauge()
                  .value())
          .isZero();
      assertThat(p.release(Outcome.COMPLETED, 1)).isTrue();
    }
  }
}

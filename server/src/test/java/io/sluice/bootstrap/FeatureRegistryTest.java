package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.config.ConfigException;
import io.sluice.config.ConfigLoader;
import io.sluice.config.ConfigSection;
import io.sluice.config.ConfigSections;
import io.sluice.config.ConfigWriter;
import io.sluice.config.Node;
import io.sluice.config.RetriesSection;
import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.EstimatorSettings;
import io.sluice.core.estimate.TokenCountCache;
import io.sluice.core.estimate.TokenEstimator;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.retry.RetryPolicy;
import io.sluice.core.session.AdmissionCheck;
import io.sluice.core.session.AdmissionSession;
import io.sluice.core.session.CheckChain;
import io.sluice.core.session.HoldTimer;
import io.sluice.core.session.OneSlotPool;
import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.SessionFront;
import io.sluice.core.session.SessionListener;
import io.sluice.core.session.SessionSteps;
import io.sluice.core.session.Sessions;
import io.sluice.core.time.FakeTicker;
import io.sluice.core.time.Ticker;
import io.sluice.feature.Contributions;
import io.sluice.feature.Feature;
import io.sluice.feature.FeatureSnapshot;
import io.sluice.feature.StorePort;
import io.sluice.observability.AdmissionMetrics;
import io.sluice.store.redis.RedisConnection;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The registries a feature module plugs into, shown with a feature of this test's own ("quiet
 * hours": a section, a store port, a check that refuses at the headers, a listener), registered
 * here without any existing class naming it.
 */
class FeatureRegistryTest {
  /** The test feature's policy: {@code quietHours: {enabled, status}}. */
  record Quiet(boolean enabled, int status) {
    static final Quiet DEFAULTS = new Quiet(false, 503);
  }

  /** Its section. */
  static final class QuietSection implements ConfigSection<Quiet> {
    static final QuietSection SECTION = new QuietSection();

    @Override
    public String name() {
      return "quietHours";
    }

    @Override
    public Quiet defaults() {
      return Quiet.DEFAULTS;
    }

    @Override
    public Quiet read(Node n, Refs refs) {
      n.only(Set.of("enabled", "status"));
      return new Quiet(
          n.get("enabled").bool(Quiet.DEFAULTS.enabled()),
          n.get("status").intValue(Quiet.DEFAULTS.status(), 400, 599));
    }

    @Override
    public ObjectNode write(Quiet q) {
      return new ObjectMapper()
          .createObjectNode()
          .put("enabled", q.enabled())
          .put("status", q.status());
    }
  }

  /** Its shared state: a counter of what it refused, and the status the snapshot set. */
  static final class Counts {
    final AtomicInteger refused = new AtomicInteger();
    volatile int status;
    final boolean isolated;

    Counts(boolean isolated) {
      this.isolated = isolated;
    }
  }

  static final StorePort<Counts> COUNTS =
      new StorePort<>() {
        @Override
        public String name() {
          return "quiet";
        }

        @Override
        public Counts memory(Ticker ticker, boolean isolated) {
          return new Counts(isolated);
        }

        @Override
        public Counts redis(RedisConnection redis) {
          throw new UnsupportedOperationException("memory only in this test");
        }

        @Override
        public void configure(Counts port, SluiceConfig config) {
          port.status = config.section(QuietSection.SECTION).status();
        }
      };

  /** Refuses every request at its headers, between the tenant rate and the retry check. */
  static final class QuietCheck implements AdmissionCheck<Integer> {
    private final Counts counts;
    private final SessionListener listener;

    QuietCheck(Counts counts, SessionListener listener) {
      this.counts = counts;
      this.listener = listener;
    }

    @Override
    public Stage stage() {
      return Stage.HEADERS;
    }

    @Override
    public boolean applies(Request r) {
      return true;
    }

    @Override
    public CompletionStage<Integer> ask(Request r) {
      return CompletableFuture.completedFuture(counts.refused.incrementAndGet());
    }

    @Override
    public boolean store() {
      return false;
    }

    @Override
    public Verdict answered(Integer n, Request r) {
      listener.on(new SessionEvent.Noted(r.subject(), "quiet #" + n));
      return new Refusal(Reason.SHUTTING_DOWN, counts.status, 60, "quiet hours");
    }
  }

  /** The feature module: its port, its check (when on), its listener. */
  static final class QuietFeature implements Feature {
    final List<Object> noted = new ArrayList<>();

    @Override
    public List<StorePort<?>> storePorts() {
      return List.of(COUNTS);
    }

    @Override
    public void contribute(FeatureSnapshot s, Contributions out) {
      Quiet q = s.config().section(QuietSection.SECTION);
      Counts counts = s.stores().port(COUNTS);
      out.check(
          CheckChain.TENANT_RATE + 10,
          snapshot -> q.enabled() ? new QuietCheck(counts, snapshot.listener()) : null);
      out.listener(
          e -> {
            if (e instanceof SessionEvent.Noted n && n.note() instanceof String text) {
              noted.add(text);
            }
          });
    }
  }

  private static final ConfigSections SECTIONS =
      ConfigSections.installed().with(QuietSection.SECTION);

  /** The embedded default policy, and {@code extra} at its top level. */
  private static String policy(String extra) {
    return ConfigLoader.embeddedDefaultYaml() + "\n" + extra + "\n";
  }

  private final FakeTicker ticker = new FakeTicker();
  private final Clock clock = Clock.fixed(Instant.ofEpochMilli(1_800_000_000_000L), ZoneOffset.UTC);

  @Test
  void section_readWithItsPath_defaultWhenAbsent_writtenAfterTheInstalledOnes() {
    SluiceConfig c =
        ConfigLoader.parse(policy("quietHours: {enabled: true, status: 429}"), SECTIONS);
    assertThat(c.section(QuietSection.SECTION)).isEqualTo(new Quiet(true, 429));
    assertThat(c.section(RetriesSection.SECTION)).isEqualTo(RetryPolicy.DEFAULTS);
    assertThat(ConfigLoader.parse(policy(""), SECTIONS).section(QuietSection.SECTION))
        .isEqualTo(Quiet.DEFAULTS);
    // a policy read without the section: its defaults
    assertThat(ConfigLoader.embeddedDefault().section(QuietSection.SECTION))
        .isEqualTo(Quiet.DEFAULTS);

    assertThatThrownBy(() -> ConfigLoader.parse(policy("quietHours: {status: 99, x: 1}"), SECTIONS))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("quietHours.status: 99 (expected:")
        .hasMessageContaining("quietHours.x: unknown key");
    assertThatThrownBy(() -> ConfigLoader.parse(policy("quietHours: {enabled: true}")))
        .hasMessageContaining("quietHours: unknown key");

    ObjectNode tree = ConfigWriter.tree(c);
    List<String> keys = new ArrayList<>();
    tree.fieldNames().forEachRemaining(keys::add);
    // after every installed section (retries, intake, ...), in registration order
    List<String> tail = new ArrayList<>();
    io.sluice.config.ConfigSections.installed().list().forEach(x -> tail.add(x.name()));
    tail.add("quietHours");
    assertThat(tail).startsWith("retries");
    assertThat(keys.subList(keys.size() - tail.size(), keys.size())).isEqualTo(tail);
    assertThat(tree.get("quietHours").toString()).isEqualTo("{\"enabled\":true,\"status\":429}");
  }

  @Test
  void storePort_builtPerBackendByPort_configuredPerSnapshot() {
    Stores stores =
        Stores.create(
            StoreEnv.settings(Map.of()), clock, ticker, new SimpleMeterRegistry(), List.of(COUNTS));
    Counts counts = stores.port(COUNTS);
    assertThat(counts.isolated).isFalse();
    stores.configure(ConfigLoader.parse(policy("quietHours: {status: 418}"), SECTIONS));
    assertThat(counts.status).isEqualTo(418);
    assertThatThrownBy(() -> stores.port(io.sluice.feature.retry.RetryFeature.ATTEMPTS))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("attempts");
  }

  @Test
  void check_joinsTheChainAtItsPlace_refuses_itsListenerReadsItsNote() {
    QuietFeature feature = new QuietFeature();
    SluiceConfig on =
        ConfigLoader.parse(policy("quietHours: {enabled: true, status: 503}"), SECTIONS);
    Stores stores =
        Stores.create(
            StoreEnv.settings(Map.of()), clock, ticker, new SimpleMeterRegistry(), List.of(COUNTS));
    stores.configure(on);
    Sessions sessions = sessions(feature, on, stores);
    assertThat(sessions.checks().checks())
        .extracting(c -> c.getClass().getSimpleName())
        .containsExactly(
            "TenantRateCheck", "QuietCheck", "TokenReservationCheck", "WorkflowPlaceCheck");

    List<String> told = new ArrayList<>();
    AdmissionSession s =
        sessions.open(
            OneSlotPool.chat(
                new Tenant("acme", TierPolicy.defaults("pro")), ticker.nanos(), null, 0),
            front(told),
            Runnable::run,
            SessionSteps.NONE);
    s.begin(true, true, 0, ticker.nanos());
    assertThat(told).containsExactly("refused 503 quiet hours");
    assertThat(feature.noted).containsExactly("quiet #1");
    assertThat(stores.port(COUNTS).refused).hasValue(1);

    SluiceConfig off = ConfigLoader.parse(policy("quietHours: {enabled: false}"), SECTIONS);
    assertThat(sessions(feature, off, stores).checks().checks())
        .extracting(c -> c.getClass().getSimpleName())
        .doesNotContain("QuietCheck");
  }

  /** The snapshot's sessions as {@link RuntimeFactory} builds them, with this one feature. */
  private Sessions sessions(Feature feature, SluiceConfig config, Stores stores) {
    Contributions out = new Contributions();
    AdmissionMetrics metrics = new AdmissionMetrics(new SimpleMeterRegistry(), ticker::nanos);
    feature.contribute(
        new FeatureSnapshot(
            config, stores, metrics, ticker, java.time.Clock.systemUTC(), java.util.Map.of()),
        out);
    AdmissionController controller = OneSlotPool.controller();
    List<SessionListener> listeners = out.listeners();
    Sessions.Builder b =
        Sessions.builder(
            controller,
            new TenantQuotas(stores.shared(), "t_", TenantQuotas.FailureMode.OPEN),
            new TokenEstimator(
                EstimatorSettings.defaults(), new TokenCountCache(1 << 16, 32), null),
            ticker,
            clock,
            NEVER,
            SessionListener.of(listeners.toArray(new SessionListener[0])));
    out.checks().forEach(b::check);
    return b.build();
  }

  private static final HoldTimer NEVER = (delayNanos, task) -> () -> {};

  private static SessionFront front(List<String> told) {
    return new SessionFront() {
      @Override
      public void admitted(boolean atBody) {
        told.add("admitted");
      }

      @Override
      public void bodyWanted() {}

      @Override
      public void held(long holdMillis) {
        told.add("held");
      }

      @Override
      public void refused(Reason reason, int status, long retryAfterSeconds, String message) {
        told.add("refused " + status + " " + message);
      }

      @Override
      public void storeFailed(Throwable cause) {
        told.add("storeFailed");
      }
    };
  }
}

package io.sluice.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.sluice.config.ConfigException;
import io.sluice.config.ConfigLoader;
import io.sluice.config.ConfigSection;
import io.sluice.config.ConfigSections;
import io.sluice.config.ConfigWriter;
import io.sluice.config.Node;
import io.sluice.config.RetriesSection;
import io.sluice.config.SluiceConfig;
import io.sluice.config.SluiceConfig.Signal;
import io.sluice.config.SluiceConfig.Source;
import io.sluice.config.TrustedHeaders;
import io.sluice.core.session.Signals;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Signal keys a registered section declares ({@link ConfigSection#declaredSignals}), shown with a
 * section of this test's own that no existing class names: {@code signals:} accepts them beside the
 * built-in ones, {@code /config} writes them, the resolver reads them into the request only while
 * the section asks and only from the sources the operator declared, and {@link TrustedHeaders}
 * warns about a guarded one's client header as about a built-in one.
 */
class RegisteredSignalsTest {
  /** A region a trusted gateway sets: a client must not choose it. */
  static final Signal REGION = Signal.guarded("region");

  /** A client's own hint about itself: harmless, read from its header unless the policy says. */
  static final Signal HINT = Signal.of("hint");

  /** {@code regions: {enabled}}: while on, its feature reads {@code region} and {@code hint}. */
  static class RegionsSection implements ConfigSection<Boolean> {
    static final RegionsSection SECTION = new RegionsSection();

    @Override
    public String name() {
      return "regions";
    }

    @Override
    public Boolean defaults() {
      return false;
    }

    @Override
    public Boolean read(Node n, Refs refs) {
      n.only(Set.of("enabled"));
      return n.get("enabled").bool(false);
    }

    @Override
    public ObjectNode write(Boolean enabled) {
      return new ObjectMapper().createObjectNode().put("enabled", enabled);
    }

    @Override
    public List<Signal> declaredSignals() {
      return List.of(REGION, HINT);
    }

    @Override
    public Set<String> signals(Boolean enabled) {
      return enabled ? Set.of(REGION.key(), HINT.key()) : Set.of();
    }

    @Override
    public Map<String, String> signalHeaders() {
      return Map.of(HINT.key(), "x-client-hint");
    }
  }

  private static final ConfigSections SECTIONS =
      ConfigSections.installed().with(RegionsSection.SECTION);

  private static final String BASE =
      """
      pools: {p: {capacity: 100}}
      classes: {c: {rank: 0}}
      routes: [{name: chat, match: {pathPrefix: /v1/chat}, pool: p, class: c}]
      """;

  private static SluiceConfig parse(String more) {
    return ConfigLoader.parse(BASE + more, SECTIONS);
  }

  @Test
  void signals_acceptsTheDeclaredKeys_writtenAfterTheBuiltInOnes_andReadBackTheSame()
      throws Exception {
    SluiceConfig c = parse("signals: {region: [{metadata: x-region}]}\n");
    assertThat(c.signals().get(REGION)).containsExactly(new Source.Metadata("x-region"));
    assertThat(c.signals().get(HINT)).containsExactly(new Source.Header("x-client-hint"));

    ObjectNode tree = ConfigWriter.tree(c);
    List<String> keys = new ArrayList<>();
    tree.get("signals").fieldNames().forEachRemaining(keys::add);
    List<String> expected = new ArrayList<>();
    Signal.BUILT_IN.forEach(s -> expected.add(s.key()));
    // every installed section's declared signals (retries', then the other features'), in order
    io.sluice.config.ConfigSections.installed()
        .list()
        .forEach(x -> x.declaredSignals().forEach(s -> expected.add(s.key())));
    assertThat(expected)
        .containsSubsequence(
            RetriesSection.SECTION.declaredSignals().stream().map(Signal::key).toList());
    expected.addAll(List.of("region", "hint"));
    assertThat(keys).isEqualTo(expected);

    SluiceConfig again =
        ConfigLoader.parse(new ObjectMapper(new YAMLFactory()).writeValueAsString(tree), SECTIONS);
    assertThat(again.signals()).isEqualTo(c.signals());
  }

  @Test
  void unknownKey_isAnErrorNamingTheFieldAndTheKeysExpected_registeredOnesIncluded() {
    assertThatThrownBy(() -> parse("signals: {regoin: [{metadata: x-region}]}\n"))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("signals.regoin: unknown key (expected one of: ")
        .hasMessageContaining("region")
        .hasMessageContaining("hint")
        .hasMessageContaining("tenant");
    // without the section its keys are unknown; without retries, retry's too
    assertThatThrownBy(() -> ConfigLoader.parse(BASE + "signals: {region: []}\n"))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("signals.region: unknown key");
    assertThatThrownBy(
            () ->
                ConfigLoader.parse(
                    BASE + "signals: {retryCount: []}\n", ConfigSections.of(List.of())))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("signals.retryCount: unknown key");
  }

  @Test
  void resolver_readsTheDeclaredSignals_whileTheSectionAsks_fromTheDeclaredSourcesOnly() {
    SignalRequest req =
        new SignalRequest()
            .metadata("x-region", "eu")
            .header("x-region", "forged")
            .header("x-client-hint", "small");

    RequestResolver on =
        new RequestResolver(
            parse("signals: {region: [{metadata: x-region}]}\nregions: {enabled: true}\n"));
    Signals read = on.resolve(req, 0).signals();
    assertThat(read.get("region")).isEqualTo("eu");
    assertThat(read.get("hint")).isEqualTo("small");
    assertThat(on.headerNames()).contains("x-client-hint");

    // a client header the operator did not declare is never read
    RequestResolver metadataOnly =
        new RequestResolver(
            parse(
                "signals: {region: [{metadata: x-region}], hint: [{metadata: x-hint}]}\n"
                    + "regions: {enabled: true}\n"));
    assertThat(metadataOnly.resolve(req, 0).signals().get("hint")).isNull();
    assertThat(metadataOnly.resolve(new SignalRequest(), 0).signals().get("region")).isNull();

    // off: not read (retry control, on by default, reads its own)
    RequestResolver off = new RequestResolver(parse("signals: {region: [{metadata: x-region}]}\n"));
    assertThat(off.resolve(req, 0).signals().get("region")).isNull();
    assertThat(off.resolve(req, 0).signals().get("hint")).isNull();
    // and with no other feature reading any: no Signals made at all
    RequestResolver alone =
        new RequestResolver(
            ConfigLoader.parse(
                BASE + "signals: {region: [{metadata: x-region}]}\n",
                ConfigSections.of(List.of(RegionsSection.SECTION))));
    assertThat(alone.resolve(req, 0).signals()).isSameAs(Signals.NONE);
  }

  @Test
  void aSnapshotThatReadsNoRegisteredSignal_allocatesNothingForThem() {
    var mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    assumeTrue(mx.isThreadAllocatedMemorySupported() && mx.isThreadAllocatedMemoryEnabled());
    String policy = BASE + "signals: {region: [{metadata: x-region}]}\n";
    RequestResolver none =
        new RequestResolver(ConfigLoader.parse(BASE, ConfigSections.of(List.of())));
    ConfigSections regions = ConfigSections.of(List.of(RegionsSection.SECTION));
    RequestResolver off = new RequestResolver(ConfigLoader.parse(policy, regions));
    RequestResolver on =
        new RequestResolver(ConfigLoader.parse(policy + "regions: {enabled: true}\n", regions));
    SignalRequest req = new SignalRequest().metadata("x-region", "eu");
    int n = 20_000;
    for (int round = 0; round < 3; round++) { // warm up: the last round counts
      long withNone = allocatedByResolves(mx, none, req, n);
      long withOff = allocatedByResolves(mx, off, req, n);
      long withOn = allocatedByResolves(mx, on, req, n);
      if (round == 2) {
        // declared and sourced, but off: not a byte more than with no such signal at all
        assertThat(withOff).isLessThanOrEqualTo(withNone + n / 10);
        assertThat(withOn).isGreaterThan(withNone + n * 16L); // the measure sees allocation
      }
    }
  }

  private static long allocatedByResolves(
      com.sun.management.ThreadMXBean mx, RequestResolver r, SignalRequest req, int n) {
    long tid = Thread.currentThread().getId();
    long before = mx.getThreadAllocatedBytes(tid);
    for (int i = 0; i < n; i++) {
      if (r.resolve(req, i, false) == null) {
        throw new AssertionError();
      }
    }
    return mx.getThreadAllocatedBytes(tid) - before;
  }

  @Test
  void trustedHeaders_warnAboutAGuardedRegisteredSignalsClientHeader_notAHarmlessOnes() {
    SluiceConfig c = parse("signals: {region: [{header: x-region}], hint: [{header: x-hint}]}\n");
    assertThat(TrustedHeaders.warnings(c))
        .singleElement()
        .asString()
        .startsWith("signals.region[0]: header x-region is trusted but not stripped");
  }

  @Test
  void sections_mustDeclareTheSignalsTheyName() {
    ConfigSection<Boolean> undeclared =
        new ConfigSection<>() {
          @Override
          public String name() {
            return "undeclared";
          }

          @Override
          public Boolean defaults() {
            return true;
          }

          @Override
          public Boolean read(Node n, Refs refs) {
            return true;
          }

          @Override
          public ObjectNode write(Boolean value) {
            return new ObjectMapper().createObjectNode();
          }

          @Override
          public Map<String, String> signalHeaders() {
            return Map.of("nowhere", "x-nowhere");
          }
        };
    assertThatThrownBy(() -> ConfigSections.of(List.of(undeclared)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("nowhere");

    ConfigSection<Boolean> otherwiseGuarded =
        new RegionsSection() {
          @Override
          public String name() {
            return "regions2";
          }

          @Override
          public List<Signal> declaredSignals() {
            return List.of(Signal.of("region"));
          }
        };
    assertThatThrownBy(() -> SECTIONS.with(otherwiseGuarded))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("region");
    assertThat(SECTIONS.signals()).containsSubsequence(Signal.TENANT, REGION, HINT);

    ConfigSection<Boolean> readsUndeclared =
        new RegionsSection() {
          @Override
          public String name() {
            return "readsUndeclared";
          }

          @Override
          public List<Signal> declaredSignals() {
            return List.of();
          }

          @Override
          public Map<String, String> signalHeaders() {
            return Map.of();
          }

          @Override
          public Set<String> signals(Boolean enabled) {
            return Set.of("nowhere");
          }
        };
    assertThatThrownBy(() -> ConfigLoader.parse(BASE, ConfigSections.of(List.of(readsUndeclared))))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("nowhere");
  }
}

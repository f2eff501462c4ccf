package io.sluice.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.EvaluationResult;
import io.sluice.core.archfixture.ReadsClocks;
import io.sluice.core.archfixture.SeesAdapters;
import io.sluice.core.archfixture.UsesQuotaFixture;
import io.sluice.core.quota.archfixture.UsesCoreFixture;
import io.sluice.extproc.archfixture.NamesAFeature;
import io.sluice.extproc.archfixture.UsesRouting;
import io.sluice.feature.archfixture.ListensToTheSession;
import io.sluice.observability.archfixture.ReadsTheSession;
import io.sluice.rls.archfixture.NamesAStore;
import io.sluice.routing.archfixture.UsesExtProc;
import io.sluice.store.archfixture.SeesThePool;
import io.sluice.wire.archfixture.UsesConfig;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every rule of {@link LayerRules} can fail: each is evaluated on a small class in test sources
 * (package {@code ..archfixture}) that breaks it on purpose, and must report that class.
 */
class LayerRulesBiteTest {
  static Stream<Arguments> breaks() {
    return Stream.of(
        Arguments.of("core is plain Java", LayerRules.CORE_IS_PLAIN_JAVA, SeesAdapters.class),
        Arguments.of("core sees no adapter", LayerRules.CORE_SEES_NO_ADAPTER, SeesAdapters.class),
        Arguments.of(
            "core reads no clock", LayerRules.CORE_READS_NO_SYSTEM_CLOCK, ReadsClocks.class),
        Arguments.of(
            "routing sees config and core",
            LayerRules.ROUTING_SEES_ONLY_CONFIG_AND_CORE,
            UsesExtProc.class),
        Arguments.of(
            "wire sees the JDK",
            LayerRules.WIRE_SEES_ONLY_THE_JDK_AND_GRPC_STREAMS,
            UsesConfig.class),
        Arguments.of(
            "only bootstrap names a store",
            LayerRules.ONLY_BOOTSTRAP_NAMES_A_STORE,
            NamesAStore.class),
        Arguments.of(
            "only bootstrap names a feature",
            LayerRules.ONLY_BOOTSTRAP_NAMES_A_FEATURE,
            NamesAFeature.class),
        Arguments.of(
            "stores see neither the pool nor config",
            LayerRules.STORES_SEE_NEITHER_THE_POOL_NOR_CONFIG,
            SeesThePool.class),
        Arguments.of(
            "observability reads facts",
            LayerRules.OBSERVABILITY_READS_FACTS_NOT_THE_SESSION,
            ReadsTheSession.class),
        Arguments.of(
            "listeners and events carry facts",
            LayerRules.LISTENERS_AND_EVENTS_CARRY_FACTS_NOT_THE_SESSION,
            ListensToTheSession.class),
        Arguments.of("no package cycles", LayerRules.NO_PACKAGE_CYCLES, UsesExtProc.class),
        Arguments.of(
            "no core package cycles", LayerRules.NO_CORE_PACKAGE_CYCLES, UsesQuotaFixture.class));
  }

  private static final JavaClasses FIXTURES =
      new ClassFileImporter()
          .importClasses(
              ReadsClocks.class,
              SeesAdapters.class,
              UsesExtProc.class,
              UsesRouting.class,
              UsesConfig.class,
              NamesAStore.class,
              NamesAFeature.class,
              UsesQuotaFixture.class,
              UsesCoreFixture.class,
              ReadsTheSession.class,
              ListensToTheSession.class,
              SeesThePool.class);

  @ParameterizedTest(name = "{0}")
  @MethodSource("breaks")
  void rule_failsOnItsDeliberateBreak(String name, ArchRule rule, Class<?> breaker) {
    EvaluationResult result = rule.evaluate(FIXTURES);
    assertThat(result.hasViolation()).as(name).isTrue();
    assertThat(result.getFailureReport().toString()).contains(breaker.getName());
  }

  @Test
  void storeRule_catchesThePoolAndConfig() {
    String report =
        LayerRules.STORES_SEE_NEITHER_THE_POOL_NOR_CONFIG
            .evaluate(FIXTURES)
            .getFailureReport()
            .toString();
    assertThat(report)
        .contains("io.sluice.core.admission.PoolState")
        .contains("io.sluice.config.ConfigException");
  }

  @Test
  void clockRule_catchesEachClock() {
    String report =
        LayerRules.CORE_READS_NO_SYSTEM_CLOCK.evaluate(FIXTURES).getFailureReport().toString();
    assertThat(report)
        .contains("java.time.Instant.now()")
        .contains("java.time.Clock.systemUTC()")
        .contains("java.time.Clock.systemDefaultZone()")
        .contains("java.lang.System.currentTimeMillis()")
        .contains("java.lang.System.nanoTime()");
  }
}

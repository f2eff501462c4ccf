package io.sluice.architecture;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/** The {@link LayerRules} on the main classes of {@code io.sluice}. */
class LayerRulesTest {
  static final JavaClasses CLASSES =
      new ClassFileImporter()
          .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
          .importPackages("io.sluice");

  @Test
  void core_importsNoGrpcProtobufNettyRedisOrMicrometer() {
    LayerRules.CORE_IS_PLAIN_JAVA.check(CLASSES);
  }

  @Test
  void core_doesNotDependOnAdaptersOrBootstrap() {
    LayerRules.CORE_SEES_NO_ADAPTER.check(CLASSES);
  }

  @Test
  void core_readsNoSystemClock() {
    LayerRules.CORE_READS_NO_SYSTEM_CLOCK.check(CLASSES);
  }

  @Test
  void routing_seesOnlyConfigAndCore() {
    LayerRules.ROUTING_SEES_ONLY_CONFIG_AND_CORE.check(CLASSES);
  }

  @Test
  void wire_seesOnlyTheJdkAndGrpcStreamMarkers() {
    LayerRules.WIRE_SEES_ONLY_THE_JDK_AND_GRPC_STREAMS.check(CLASSES);
  }

  @Test
  void onlyBootstrap_namesAStoreImplementation() {
    LayerRules.ONLY_BOOTSTRAP_NAMES_A_STORE.check(CLASSES);
  }

  @Test
  void onlyBootstrap_namesAFeatureModule() {
    LayerRules.ONLY_BOOTSTRAP_NAMES_A_FEATURE.check(CLASSES);
  }

  @Test
  void stores_seeNeitherThePoolNorConfig() {
    LayerRules.STORES_SEE_NEITHER_THE_POOL_NOR_CONFIG.check(CLASSES);
  }

  @Test
  void observability_readsFactsNotTheSession() {
    LayerRules.OBSERVABILITY_READS_FACTS_NOT_THE_SESSION.check(CLASSES);
  }

  @Test
  void listenersAndEvents_carryFactsNotTheSession() {
    LayerRules.LISTENERS_AND_EVENTS_CARRY_FACTS_NOT_THE_SESSION.check(CLASSES);
  }

  @Test
  void topLevelPackages_haveNoCycles() {
    LayerRules.NO_PACKAGE_CYCLES.check(CLASSES);
  }

  @Test
  void coreSubpackages_haveNoCycles() {
    LayerRules.NO_CORE_PACKAGE_CYCLES.check(CLASSES);
  }
}

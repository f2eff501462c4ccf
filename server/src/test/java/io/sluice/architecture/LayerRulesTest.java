package io.sluice.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/** The admission core is plain Java: adapters translate, the core never sees transport types. */
class LayerRulesTest {
  private static final JavaClasses CLASSES =
      new ClassFileImporter()
          .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
          .importPackages("io.sluice");

  @Test
  void core_importsNoGrpcProtobufNettyRedisOrMicrometer() {
    noClasses()
        .that()
        .resideInAPackage("io.sluice.core..")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage(
            "io.grpc..",
            "com.google.protobuf..",
            "io.netty..",
            "io.grpc.netty.shaded..",
            "io.lettuce..",
            "io.micrometer..",
            "io.envoyproxy..",
            "io.sluice.api..",
            "redis..")
        .check(CLASSES);
  }

  @Test
  void core_doesNotDependOnAdaptersOrBootstrap() {
    noClasses()
        .that()
        .resideInAPackage("io.sluice.core..")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage(
            "io.sluice.extproc..",
            "io.sluice.rls..",
            "io.sluice.bootstrap..",
            "io.sluice.config..",
            "io.sluice.observability..",
            "io.sluice.store..")
        .check(CLASSES);
  }

  @Test
  void core_readsNoSystemClock() {
    noClasses()
        .that()
        .resideInAPackage("io.sluice.core..")
        .and()
        .resideOutsideOfPackage("io.sluice.core.time..")
        .should()
        .callMethod(System.class, "nanoTime")
        .orShould()
        .callMethod(System.class, "currentTimeMillis")
        .check(CLASSES);
  }
}

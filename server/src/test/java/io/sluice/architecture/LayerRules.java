package io.sluice.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaCall;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.lang.ArchRule;
import java.time.Clock;
import java.time.Instant;
import java.util.Set;

/**
 * The house's layers, checked on the main classes:
 *
 * <ul>
 *   <li>{@code core}: plain Java (no transport, metrics or store types), no adapters, no wall or
 *       monotonic clock read except through {@code core.time.Ticker}.
 *   <li>{@code routing}: resolves a request from the policy; sees only {@code config} and {@code
 *       core} (and the JSpecify nullness annotations).
 *   <li>{@code wire}: the hand-written protobuf codec; sees only the JDK and gRPC's stream marker
 *       interfaces, and no Sluice package.
 *   <li>{@code store.*} implementations: named only by {@code bootstrap} (the one wiring root),
 *       everyone else uses the {@code core.store} ports; a store sees neither the pool ({@code
 *       core.admission}) nor {@code config}: it implements a port on plain values, which the
 *       bootstrap reads from the policy and passes in.
 *   <li>{@code feature}: the feature modules (a feature's section, store port, check and listeners
 *       in one place), named only by {@code bootstrap}; like it, it may name a store.
 *   <li>{@code observability}: reads the events' immutable request facts, never the live {@code
 *       AdmissionSession}.
 *   <li>No cycles between top-level packages, nor between the subpackages of {@code core}.
 * </ul>
 *
 * {@link LayerRulesTest} checks them on the main classes; {@link LayerRulesBiteTest} shows each one
 * failing on a class that breaks it on purpose.
 */
final class LayerRules {
  private LayerRules() {}

  /** Packages of transport, serialization, metrics and store drivers. */
  static final String[] INFRASTRUCTURE = {
    "io.grpc..",
    "com.google.protobuf..",
    "io.netty..",
    "io.grpc.netty.shaded..",
    "io.lettuce..",
    "io.micrometer..",
    "io.envoyproxy..",
    "io.sluice.api..",
    "redis.."
  };

  static final ArchRule CORE_IS_PLAIN_JAVA =
      noClasses()
          .that()
          .resideInAPackage("io.sluice.core..")
          .should()
          .dependOnClassesThat()
          .resideInAnyPackage(INFRASTRUCTURE);

  static final ArchRule CORE_SEES_NO_ADAPTER =
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
              "io.sluice.routing..",
              "io.sluice.wire..",
              "io.sluice.store..");

  /** {@code Instant.now}, {@code Clock.system*}, {@code System.currentTimeMillis/nanoTime}. */
  static final DescribedPredicate<JavaCall<?>> READS_A_SYSTEM_CLOCK =
      new DescribedPredicate<>(
          "read a system clock (Instant.now, Clock.system*, System.currentTimeMillis/nanoTime)") {
        @Override
        public boolean test(JavaCall<?> call) {
          String owner = call.getTargetOwner().getName();
          String name = call.getName();
          if (owner.equals(System.class.getName())) {
            return Set.of("currentTimeMillis", "nanoTime").contains(name);
          }
          if (owner.equals(Instant.class.getName())) {
            return name.equals("now");
          }
          if (owner.equals(Clock.class.getName())) {
            return name.startsWith("system");
          }
          return false;
        }
      };

  static final ArchRule CORE_READS_NO_SYSTEM_CLOCK =
      noClasses()
          .that()
          .resideInAPackage("io.sluice.core..")
          // Ticker.system() is the one door to the monotonic clock; the bootstrap passes it in
          .and()
          .doNotHaveFullyQualifiedName(io.sluice.core.time.Ticker.class.getName())
          .should()
          .callMethodWhere(READS_A_SYSTEM_CLOCK)
          .orShould()
          .callConstructorWhere(
              DescribedPredicate.describe(
                  "construct a Clock", c -> c.getTargetOwner().isAssignableTo(Clock.class)));

  static final ArchRule ROUTING_SEES_ONLY_CONFIG_AND_CORE =
      classes()
          .that()
          .resideInAPackage("io.sluice.routing..")
          .should()
          .onlyDependOnClassesThat()
          .resideInAnyPackage(
              "java..",
              "io.sluice.routing..",
              "io.sluice.config..",
              "io.sluice.core..",
              "org.jspecify.annotations..");

  static final ArchRule WIRE_SEES_ONLY_THE_JDK_AND_GRPC_STREAMS =
      classes()
          .that()
          .resideInAPackage("io.sluice.wire..")
          .should()
          .onlyDependOnClassesThat(
              JavaClass.Predicates.resideInAnyPackage(
                      "java..", "io.sluice.wire..", "org.jspecify.annotations..")
                  .or(JavaClass.Predicates.equivalentTo(io.grpc.Drainable.class))
                  .or(JavaClass.Predicates.equivalentTo(io.grpc.KnownLength.class)));

  static final ArchRule ONLY_BOOTSTRAP_NAMES_A_STORE =
      noClasses()
          .that()
          .resideOutsideOfPackages(
              "io.sluice.bootstrap..", "io.sluice.store..", "io.sluice.feature..")
          .should()
          .dependOnClassesThat()
          .resideInAPackage("io.sluice.store..")
          .because(
              "bootstrap builds the stores once and hands out the io.sluice.core.store ports (a"
                  + " feature module's StorePort says how its own port is built on each backend)");

  /**
   * Feature modules ({@code io.sluice.feature}) wire one feature's parts (section, store port,
   * check, listeners) and sit just below the wiring root: only {@code bootstrap} names them.
   */
  static final ArchRule ONLY_BOOTSTRAP_NAMES_A_FEATURE =
      noClasses()
          .that()
          .resideOutsideOfPackages("io.sluice.bootstrap..", "io.sluice.feature..")
          .should()
          .dependOnClassesThat()
          .resideInAPackage("io.sluice.feature..")
          .because("the bootstrap's list of features is the one registration line of a feature");

  /**
   * The one exception, by target class: {@code RedisSettings.toString} masks its credentials with
   * config's {@code Secrets}, the one implementation of the masking every log line and answer uses
   * (the settings themselves are read from the environment by {@code bootstrap.StoreEnv}).
   */
  static final Set<String> STORE_CREDENTIAL_MASKING = Set.of("io.sluice.config.Secrets");

  static final ArchRule STORES_SEE_NEITHER_THE_POOL_NOR_CONFIG =
      noClasses()
          .that()
          .resideInAPackage("io.sluice.store..")
          .should()
          .dependOnClassesThat(
              JavaClass.Predicates.resideInAPackage("io.sluice.core.admission..")
                  .or(
                      JavaClass.Predicates.resideInAPackage("io.sluice.config..")
                          .and(
                              DescribedPredicate.not(
                                  DescribedPredicate.describe(
                                      "credential masking",
                                      c -> STORE_CREDENTIAL_MASKING.contains(c.getName()))))))
          .as("stores see neither the pool (core.admission) nor config")
          .because(
              "a store implements a core port on plain values (core.share, core.store, ...);"
                  + " the bootstrap passes it what it needs of the policy");

  static final ArchRule OBSERVABILITY_READS_FACTS_NOT_THE_SESSION =
      noClasses()
          .that()
          .resideInAPackage("io.sluice.observability..")
          .should()
          .dependOnClassesThat()
          .belongToAnyOf(io.sluice.core.session.AdmissionSession.class)
          .because(
              "listeners read the immutable RequestFacts an event carries, never the live session");

  /**
   * Wherever a listener lives (metrics, the decision log, the learners, a feature's own), it hears
   * events, and an event carries the request's immutable facts: neither reads the live session, its
   * running request or its check run.
   */
  static final ArchRule LISTENERS_AND_EVENTS_CARRY_FACTS_NOT_THE_SESSION =
      noClasses()
          .that()
          .implement(io.sluice.core.session.SessionListener.class)
          .or()
          .implement(io.sluice.core.session.SessionEvent.class)
          .or()
          .belongToAnyOf(
              io.sluice.core.session.RequestFacts.class, io.sluice.core.session.Subject.class)
          .should()
          .dependOnClassesThat()
          .haveNameMatching(
              "io\\.sluice\\.core\\.session\\.(AdmissionSession|RunningRequest|CheckRun)(\\$.*)?")
          .because(
              "an event carries immutable facts; a listener reads them, never the live session");

  static final ArchRule NO_PACKAGE_CYCLES =
      slices().matching("io.sluice.(*)..").should().beFreeOfCycles();

  /**
   * The top-level rule sees {@code core} as one slice; inside it the packages layer too ({@code
   * time}, {@code policy}, {@code store}, {@code estimate} below {@code queue} and {@code
   * admission}, then {@code quota} and {@code share}, then {@code session}), and that order holds.
   */
  static final ArchRule NO_CORE_PACKAGE_CYCLES =
      slices().matching("io.sluice.core.(*)..").should().beFreeOfCycles();
}

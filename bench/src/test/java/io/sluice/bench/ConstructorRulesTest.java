package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaConstructor;
import com.tngtech.archunit.core.domain.JavaConstructorCall;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * The server's constructor rule (its {@code architecture.ConstructorRules}) on the main classes of
 * the harness and bench modules: no constructor calls another constructor of its own class ({@code
 * this(...)}). A constructor that fills in defaults for another keeps old callers compiling and
 * hides each new parameter behind positional calls; callers pass the defaults, use a builder, or
 * call a named static factory ({@code SimulatedLlmUpstream.create}, {@code Workload.of}, {@code
 * HttpResult.beforeRouter}). Read from the bytecode, records included.
 */
class ConstructorRulesTest {
  /**
   * Classes that still delegate, when the rule came to these modules: nothing may join, an entry
   * goes when its class is fixed (the last one, the floor's {@code FloorServers.Sluice}, went at
   * the merge that brought the rule): empty.
   */
  static final Set<String> NOT_YET_REMOVED = Set.of();

  @Test
  void harnessAndBenchClasses_haveNoDelegatingConstructor() {
    assertThat(ClassShapeTest.CLASSES.contain(BenchMain.class)).as("bench's classes").isTrue();
    assertThat(ClassShapeTest.CLASSES.contain(io.sluice.harness.Workload.class))
        .as("harness's classes")
        .isTrue();
    Set<String> found = delegating(ClassShapeTest.CLASSES);
    Set<String> breaking = new TreeSet<>(found);
    breaking.removeAll(NOT_YET_REMOVED);
    assertThat(breaking)
        .as(
            "classes with a constructor calling this(...): one constructor, and callers pass the"
                + " defaults, a builder or a named static factory")
        .isEmpty();
    Set<String> stale = new TreeSet<>(NOT_YET_REMOVED);
    stale.removeAll(found);
    assertThat(stale).as("entries fixed since: remove them").isEmpty();
  }

  @Test
  void aDelegatingConstructor_fails() {
    JavaClasses fixtures =
        new ClassFileImporter().importClasses(Delegating.class, WithFactory.class);
    assertThat(delegating(fixtures)).containsExactly(Delegating.class.getName());
  }

  /** Fails the rule: its one-argument constructor fills in the second. */
  static final class Delegating {
    final String name;
    final int size;

    Delegating(String name) {
      this(name, 1);
    }

    Delegating(String name, int size) {
      this.name = name;
      this.size = size;
    }
  }

  /** Passes: one constructor, the default behind a named factory. */
  static final class WithFactory {
    final String name;
    final int size;

    WithFactory(String name, int size) {
      this.name = name;
      this.size = size;
    }

    static WithFactory single(String name) {
      return new WithFactory(name, 1);
    }
  }

  /** The classes with a constructor that calls a constructor of the same class. */
  static Set<String> delegating(JavaClasses classes) {
    Set<String> out = new TreeSet<>();
    for (JavaClass c : classes) {
      for (JavaConstructor ctor : c.getConstructors()) {
        for (JavaConstructorCall call : ctor.getConstructorCallsFromSelf()) {
          if (call.getTargetOwner().equals(c)) {
            out.add(c.getName());
          }
        }
      }
    }
    return out;
  }
}

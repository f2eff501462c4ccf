package io.sluice.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import java.util.Set;

/**
 * A record has exactly one constructor, its canonical one. A second constructor that fills in
 * defaults ("compatibility constructor") keeps old callers compiling and hides every new component
 * behind positional calls; defaults belong beside the record ({@code DEFAULTS}, {@code defaults()})
 * and tests use a builder instead.
 *
 * <p>{@link RecordRulesTest} checks the main classes; {@link RecordRulesBiteTest} shows the rule
 * failing on a record that breaks it on purpose.
 */
final class RecordRules {
  private RecordRules() {}

  /**
   * Records of main code that still have a second constructor, frozen: this list only shrinks to
   * empty. A record not named here fails the rule as soon as it gets a second constructor.
   */
  static final Set<String> STILL_TWO_CONSTRUCTORS = Set.of();

  private static final DescribedPredicate<JavaClass> ARE_RECORDS =
      new DescribedPredicate<>("are records") {
        @Override
        public boolean test(JavaClass c) {
          return c.isRecord();
        }
      };

  private static final ArchCondition<JavaClass> HAVE_ONE_CONSTRUCTOR =
      new ArchCondition<>("have exactly one constructor (the canonical one)") {
        @Override
        public void check(JavaClass c, ConditionEvents events) {
          int n = c.getConstructors().size();
          events.add(
              new SimpleConditionEvent(
                  c,
                  n == 1,
                  c.getName()
                      + " has "
                      + n
                      + " constructors (expected: 1; defaults beside the record, a builder"
                      + " for tests)"));
        }
      };

  /** Every record of {@code io.sluice} but those in {@code allowed} has one constructor. */
  static ArchRule recordsHaveOneConstructor(Set<String> allowed) {
    return classes()
        .that()
        .resideInAPackage("io.sluice..")
        .and(ARE_RECORDS)
        .and(notNamed(allowed))
        .should(HAVE_ONE_CONSTRUCTOR)
        .allowEmptyShould(true);
  }

  private static DescribedPredicate<JavaClass> notNamed(Set<String> names) {
    return new DescribedPredicate<>("are not in the frozen list " + names) {
      @Override
      public boolean test(JavaClass c) {
        return !names.contains(c.getName());
      }
    };
  }

  static final ArchRule RECORDS_HAVE_ONE_CONSTRUCTOR =
      recordsHaveOneConstructor(STILL_TWO_CONSTRUCTORS);
}

package io.sluice.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.EvaluationResult;
import io.sluice.core.archfixture.OneConstructor;
import io.sluice.core.archfixture.TwoConstructors;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The one-constructor rule of {@link RecordRules} bites: a new record with a second constructor
 * fails it, a record with only its canonical constructor passes, and only a name on the frozen list
 * is let through.
 */
class RecordRulesBiteTest {
  private static final JavaClasses FIXTURES =
      new ClassFileImporter().importClasses(TwoConstructors.class, OneConstructor.class);

  @Test
  void aNewRecordWithTwoConstructors_fails() {
    EvaluationResult result = RecordRules.RECORDS_HAVE_ONE_CONSTRUCTOR.evaluate(FIXTURES);
    assertThat(result.hasViolation()).isTrue();
    assertThat(result.getFailureReport().toString())
        .contains(TwoConstructors.class.getName() + " has 2 constructors")
        .doesNotContain(OneConstructor.class.getName());
  }

  @Test
  void onlyTheFrozenList_letsOneThrough() {
    EvaluationResult allowed =
        RecordRules.recordsHaveOneConstructor(Set.of(TwoConstructors.class.getName()))
            .evaluate(FIXTURES);
    assertThat(allowed.hasViolation()).isFalse();
  }
}

package io.sluice.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.EvaluationResult;
import io.sluice.core.archfixture.DelegatingConstructor;
import io.sluice.core.archfixture.FactoryForDefaults;
import io.sluice.core.archfixture.OneConstructor;
import org.junit.jupiter.api.Test;

/**
 * The {@link ConstructorRules} on the main classes of {@code io.sluice}, and the rule biting: a
 * class whose constructor fills in a default through {@code this(...)} fails it; one constructor
 * with a named static factory, and a record's canonical constructor, pass.
 */
class ConstructorRulesTest {
  @Test
  void mainClasses_haveNoDelegatingConstructor() {
    ConstructorRules.NO_DELEGATING_CONSTRUCTORS.check(LayerRulesTest.CLASSES);
  }

  @Test
  void aDelegatingConstructor_fails() {
    JavaClasses fixtures =
        new ClassFileImporter()
            .importClasses(
                DelegatingConstructor.class, FactoryForDefaults.class, OneConstructor.class);
    EvaluationResult result = ConstructorRules.NO_DELEGATING_CONSTRUCTORS.evaluate(fixtures);
    assertThat(result.hasViolation()).isTrue();
    assertThat(result.getFailureReport().getDetails())
        .hasSize(1)
        .first()
        .asString()
        .contains(DelegatingConstructor.class.getName() + ".<init>(java.lang.String) calls ")
        .contains(DelegatingConstructor.class.getName() + ".<init>(java.lang.String, int)");
  }
}

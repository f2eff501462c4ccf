package io.sluice.architecture;

import org.junit.jupiter.api.Test;

/** The {@link RecordRules} on the main classes of {@code io.sluice}. */
class RecordRulesTest {
  @Test
  void records_haveOneConstructor() {
    RecordRules.RECORDS_HAVE_ONE_CONSTRUCTOR.check(LayerRulesTest.CLASSES);
  }
}

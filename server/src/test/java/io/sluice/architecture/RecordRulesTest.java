package io.sluice.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The {@link RecordRules} on the main classes of {@code io.sluice}. */
class RecordRulesTest {
  @Test
  void records_haveOneConstructor() {
    RecordRules.RECORDS_HAVE_ONE_CONSTRUCTOR.check(LayerRulesTest.CLASSES);
  }

  @Test
  void frozenList_namesOnlyRecordsThatStillBreakTheRule() {
    List<String> stale = new ArrayList<>();
    for (String name : RecordRules.STILL_TWO_CONSTRUCTORS) {
      if (!LayerRulesTest.CLASSES.contain(name)
          || LayerRulesTest.CLASSES.get(name).getConstructors().size() == 1) {
        stale.add(name);
      }
    }
    assertThat(stale).as("records with one constructor now: remove them from the list").isEmpty();
  }
}

package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The server's "no class over 20 fields" rule (its {@code architecture.ClassShapeTest}) on the main
 * classes of the harness and bench modules: a class that holds more instance fields does more than
 * one job (split it, or group the fields into a record).
 */
class ClassShapeTest {
  static final int MAX_FIELDS = 20;

  /**
   * Classes over {@link #MAX_FIELDS}, with their count: each may only shrink, nothing may join.
   * Empty since the emulator's filter config was grouped as Envoy groups it (processing mode,
   * metadata options, stream close) and the run's report and tally were split by concern (outcomes,
   * refusals, TTFT, tokens, upstream; per second, by group).
   */
  static final Map<String, Integer> NOT_YET_SPLIT = Map.of();

  /** The harness's packages and the bench's, main classes only. */
  static final JavaClasses CLASSES =
      new ClassFileImporter()
          .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
          .importPackages(
              "io.sluice.bench", "io.sluice.harness", "io.sluice.emulator", "io.sluice.upstream");

  @Test
  void harnessAndBenchClasses_holdAtMostTwentyFields() {
    assertThat(CLASSES.contain(BenchMain.class)).as("bench's classes imported").isTrue();
    assertThat(CLASSES.contain(io.sluice.harness.LoadGenerator.class))
        .as("harness's classes imported")
        .isTrue();
    Map<String, Integer> over = over(CLASSES);
    Map<String, Integer> breaking = new TreeMap<>(over);
    breaking.entrySet().removeIf(e -> e.getValue() <= NOT_YET_SPLIT.getOrDefault(e.getKey(), 0));
    assertThat(breaking)
        .as("classes over %d instance fields that are not listed (split them)", MAX_FIELDS)
        .isEmpty();
    Map<String, Integer> stale = new TreeMap<>(NOT_YET_SPLIT);
    stale.entrySet().removeIf(e -> e.getValue().equals(over.get(e.getKey())));
    assertThat(stale).as("entries that shrank: lower or remove them").isEmpty();
  }

  @Test
  void fieldCount_bites() {
    assertThat(over(new ClassFileImporter().importClasses(TwentyOneFields.class)))
        .containsEntry(TwentyOneFields.class.getName(), 21);
  }

  @SuppressWarnings("unused")
  static final class TwentyOneFields {
    static final int NOT_COUNTED = 0;
    int a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t;
    boolean u;
  }

  /** The classes over {@link #MAX_FIELDS} instance fields, with their count. */
  static Map<String, Integer> over(JavaClasses classes) {
    Map<String, Integer> out = new TreeMap<>();
    for (JavaClass c : classes) {
      long n =
          c.getFields().stream()
              .filter(f -> !f.getModifiers().contains(JavaModifier.STATIC))
              .filter(f -> !f.getModifiers().contains(JavaModifier.SYNTHETIC))
              .count();
      if (n > MAX_FIELDS) {
        out.put(c.getName(), (int) n);
      }
    }
    return out;
  }
}
